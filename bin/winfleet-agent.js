#!/usr/bin/env node
// The checkout's entry; a release's bin/winfleet-agent.js is the bundle itself.
require("./launch").launch({ dir: "agent", file: "bin/winfleet-agent.js" }, "agent/cli/agent-main");

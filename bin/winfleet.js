#!/usr/bin/env node
require("./launch").launch({ dir: "winfleet", file: "bin/winfleet.js" }, "agent/cli/winfleet-main");

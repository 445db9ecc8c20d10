#!/usr/bin/env node
// The checkout's entry for the operator's command line (see launch.js for which build it runs).
require("./launch").launch({ dir: "winfleet", file: "bin/winfleet.js" }, "agent/cli/winfleet-main");

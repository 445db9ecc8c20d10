#!/usr/bin/env node
// The operator's command line runs from a checkout's sources (it is not bundled: Pulumi loads its
// plugins by path), so WINFLEET_LAUNCH=bundle, which picks the agent's bundle, leaves it as it is.
require("tsx/cjs");
require("../agent/cli/winfleet-main.ts");

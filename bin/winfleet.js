#!/usr/bin/env node
require("./launch").launch("agent/cli/winfleet-main");

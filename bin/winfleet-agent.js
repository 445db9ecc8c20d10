#!/usr/bin/env node
// In a source checkout the TypeScript runs through tsx; a built bundle ships dist/ only.
require("./launch").launch("agent/cli/agent-main");

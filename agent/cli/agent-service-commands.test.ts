import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Command } from "commander";
import { registerAgentServiceCommands } from "./agent-service-commands";

describe("the agent's service commands", () => {
  it("load no part of the service for `ready`, which a readiness probe runs every few seconds on every host", () => {
    const program = new Command("winfleet-agent");
    registerAgentServiceCommands(program, program.command("service"));
    assert.ok(
      program.commands.some((c) => c.name() === "ready"),
      "ready is registered",
    );
    const loaded = Object.keys(require.cache).filter((k) => /[\\/]agent[\\/]service[\\/]/.test(k));
    assert.deepEqual(loaded, [], "modules of agent/service loaded");
  });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Command } from "commander";
import { AGENT_COMMANDS } from "./agent-commands";
import { modulesFor, registerLazily } from "./lazy-commands";

const everything = (): Command => {
  const program = new Command("winfleet-agent");
  for (const m of AGENT_COMMANDS) m.load()(program);
  return program;
};

describe("lazily registered agent commands", () => {
  it("lists, for each module, exactly the top-level commands it registers", () => {
    for (const m of AGENT_COMMANDS) {
      const program = new Command("winfleet-agent");
      m.load()(program);
      assert.deepEqual(program.commands.map((c) => c.name()).sort(), [...m.names].sort(), m.names.join(", "));
    }
  });

  it("registers for a command line only the modules naming its command, and the same command either way", () => {
    const all = everything();
    for (const command of all.commands) {
      const lazy = new Command("winfleet-agent");
      registerLazily(lazy, AGENT_COMMANDS, ["node", "winfleet-agent", command.name()]);
      const loaded = lazy.commands.find((c) => c.name() === command.name());
      assert.ok(loaded, command.name());
      assert.deepEqual(
        loaded.commands.map((c) => c.name()).sort(),
        command.commands.map((c) => c.name()).sort(),
        `${command.name()}'s subcommands`,
      );
      assert.deepEqual(
        loaded.options.map((o) => o.flags),
        command.options.map((o) => o.flags),
        `${command.name()}'s options`,
      );
    }
  });

  it("loads nothing for --version and everything for help or an unknown word", () => {
    assert.equal(modulesFor(AGENT_COMMANDS, ["node", "a", "--version"]).length, 0);
    assert.equal(modulesFor(AGENT_COMMANDS, ["node", "a", "--help"]).length, AGENT_COMMANDS.length);
    assert.equal(modulesFor(AGENT_COMMANDS, ["node", "a", "frobnicate"]).length, AGENT_COMMANDS.length);
    assert.equal(modulesFor(AGENT_COMMANDS, ["node", "a"]).length, AGENT_COMMANDS.length);
    assert.deepEqual(
      modulesFor(AGENT_COMMANDS, ["node", "a", "service", "reload-config"]).map((m) => m.names),
      [
        ["up", "service"],
        ["ready", "retarget", "service"],
      ],
    );
  });
});

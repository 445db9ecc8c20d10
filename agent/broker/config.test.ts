import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ValidationError } from "../common/errors";
import { endpointPath, parseBrokerConfig } from "./config";

describe("broker config", () => {
  it("reads wins >= 0.1.2's white_list with camelCase keys", () => {
    const c = parseBrokerConfig("white_list:\n  processPaths: [C:/etc/a.exe]\n  proxyPorts: [9796]\n");
    assert.deepEqual(c.whiteList, { processPaths: ["C:/etc/a.exe"], proxyPorts: [9796], allowAll: false });
    assert.equal(c.listen, "rancher_wins");
  });

  it("reads the chart's whiteList spelling and snake_case nested keys, case-insensitively", () => {
    assert.deepEqual(
      parseBrokerConfig("whiteList:\n  process_paths: [x]\n  proxy_ports: [1]\n").whiteList.processPaths,
      ["x"],
    );
    assert.deepEqual(parseBrokerConfig('{"White_List": {"ProcessPaths": ["y"]}}').whiteList.processPaths, ["y"]);
  });

  it("accepts allowAll at the top level or in the whitelist, and ignores sections it does not serve", () => {
    assert.equal(
      parseBrokerConfig("allowAll: true\nupgrade: {mode: watching}\nsystemagent: {}\n").whiteList.allowAll,
      true,
    );
    assert.equal(parseBrokerConfig("white_list: {allowAll: true}").whiteList.allowAll, true);
  });

  it("names the path of a bad value", () => {
    assert.throws(
      () => parseBrokerConfig("white_list:\n  proxyPorts: [70000]\n"),
      (e: unknown) => e instanceof ValidationError && e.issues[0]?.path === "whiteList.proxyPorts[0]",
    );
    assert.throws(
      () => parseBrokerConfig("listen: '  '\n"),
      (e: unknown) => e instanceof ValidationError && e.issues[0]?.path === "listen",
    );
    assert.throws(() => parseBrokerConfig("bogus: 1\n"), ValidationError);
    assert.throws(() => parseBrokerConfig("- a\n"), /mapping/);
  });

  it("maps names to pipes on Windows and sockets on Linux", () => {
    assert.equal(endpointPath("rancher_wins", "win32", "/run/x"), "\\\\.\\pipe\\rancher_wins");
    assert.equal(endpointPath("rancher_wins", "linux", "/run/winfleet"), "/run/winfleet/rancher_wins.sock");
    assert.equal(endpointPath("/tmp/a.sock", "linux", "/run/winfleet"), "/tmp/a.sock");
  });
});

/**
 * Pulumi's runtime as a render needs it. For every resource it registers,
 * Pulumi's runtime records where in the program it was declared (a stack trace
 * at full depth, formatted and parsed), and it wraps about 40 promises per
 * resource for leak reports at exit, each with a stack trace of its own. Under
 * mocks nothing reads either: the mock monitor ignores source positions, and a
 * render waits for every registration before it returns. Profiled on 1,000 BYO
 * hosts (10,000 registrations over a render's two runs, 400,000 wrapped
 * promises), they were nearly a third of the render's CPU time, the collector
 * included. What a resource is (its type, name, parent and inputs) does not
 * depend on either.
 */

/** The runtime's promise wrapper (marked internal in its types; the runtime calls it through its module object). */
type Wrapper = <T>(p: Promise<T>, ctx: unknown) => Promise<T>;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const runtime = require("@pulumi/pulumi/runtime/debuggable") as { debuggablePromise?: Wrapper };

/** The settings {@link withLeanRuntime} changes, as they are now. */
export interface RuntimeSettings {
  readonly sourceMaps: boolean;
  /** `Error.stackTraceLimit` as defined on `Error`: a number, or while a render runs, an accessor. */
  readonly stackTraceLimit: PropertyDescriptor | undefined;
  readonly debuggablePromise: Wrapper | undefined;
}

/** The current settings (for tests: they must be back as they were after a render). */
export function runtimeSettings(): RuntimeSettings {
  return {
    sourceMaps: process.sourceMapsEnabled,
    stackTraceLimit: Object.getOwnPropertyDescriptor(Error, "stackTraceLimit"),
    debuggablePromise: runtime.debuggablePromise,
  };
}

function apply(s: RuntimeSettings): void {
  process.setSourceMapsEnabled(s.sourceMaps);
  if (s.stackTraceLimit) Object.defineProperty(Error, "stackTraceLimit", s.stackTraceLimit);
  else delete (Error as { stackTraceLimit?: number }).stackTraceLimit;
  if (s.debuggablePromise) runtime.debuggablePromise = s.debuggablePromise;
}

const LEAN: Omit<RuntimeSettings, "debuggablePromise"> = {
  sourceMaps: false,
  // Pulumi sets the limit to Infinity around each source position it captures, and back. As an accessor the limit
  // reads 0 and ignores those writes, and V8, which takes the limit only from a plain number, captures no trace at
  // all: an error's stack is undefined, a source position "none".
  stackTraceLimit: { get: () => 0, set: () => undefined, enumerable: true, configurable: true },
};

/**
 * Runs `work` with the traces off and promises unwrapped, then puts everything
 * back. If it then fails with anything but the program's own refusal (a
 * RunError), it runs once more as Pulumi runs normally, so that a crash comes
 * with a stack to read.
 */
export async function withLeanRuntime<T>(work: () => Promise<T>): Promise<T> {
  const saved = runtimeSettings();
  apply({ ...LEAN, debuggablePromise: saved.debuggablePromise ? (p) => p : undefined });
  try {
    return await work();
  } catch (e) {
    if ((e as { __pulumiRunError?: boolean }).__pulumiRunError === true) throw e;
  } finally {
    apply(saved);
  }
  return work();
}

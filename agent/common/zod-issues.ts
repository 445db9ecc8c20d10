/** zod's issues as the catalog's {@link Issue}s, each naming the path of the bad value. */
import type { z } from "zod";
import { formatPath, type Issue } from "./errors";

/** Turns zod's issues into ours. */
export function zodIssues(error: z.ZodError): Issue[] {
  return error.issues.map((i) => ({
    path: formatPath(i.path.filter((p): p is string | number => typeof p !== "symbol")),
    message: i.message,
    severity: "error" as const,
  }));
}

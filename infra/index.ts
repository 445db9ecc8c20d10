/**
 * The Pulumi program's entry (`main: infra/` in Pulumi.yaml). Pulumi calls the
 * exported function and exports what it returns as the stack's outputs.
 */
import { fleetProgram } from "./program";

export = fleetProgram;

/**
 * The one check for a pinned public key, shared by every way one enters: an
 * agent config's `publicKey`, `--public-key FILE`, and a stack's
 * `agent.publicKey`; and for the signing key `release --key` reads. Checked
 * where it enters, so a bad key is an error naming where it came from, not an
 * OpenSSL decoder message at the first apply or after a whole build.
 */
import { type KeyObject, createPrivateKey, createPublicKey } from "node:crypto";
import { z } from "zod";

/** Why `pem` is not an ed25519 public key (PEM), or undefined when it is one. */
export function ed25519KeyProblem(pem: string): string | undefined {
  // createPublicKey also accepts a private key (and derives its public half): a private key pasted
  // here would work, and then sit in every node's config.
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem))
    return "is a private key: pin the public key (the .pub file), and keep the private key off nodes";
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch {
    return "is not a PEM public key (winfleet keys generate writes one)";
  }
  if (key.asymmetricKeyType !== "ed25519")
    return `is ${key.asymmetricKeyType ? `an ${key.asymmetricKeyType}` : "not an asymmetric"} key, not ed25519`;
  return undefined;
}

/** Why `pem` is not an ed25519 private key (PEM), or undefined when it is one. */
export function ed25519PrivateKeyProblem(pem: string): string | undefined {
  if (/-----BEGIN [A-Z ]*PUBLIC KEY-----/.test(pem))
    return "is a public key: releases are signed with the private key (the .key file)";
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch {
    return "is not a PEM private key (winfleet keys generate writes one)";
  }
  if (key.asymmetricKeyType !== "ed25519")
    return `is ${key.asymmetricKeyType ? `an ${key.asymmetricKeyType}` : "not an asymmetric"} key, not ed25519`;
  return undefined;
}

/** A string that must hold an ed25519 public key (PEM). */
export const ed25519PublicKey = z.string().superRefine((pem, ctx) => {
  const problem = ed25519KeyProblem(pem);
  if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
});

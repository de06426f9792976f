/*
 * veil_onnx_internal.h — what the two files of the veil-onnx tool share: the usage text, the
 * exit code of a library status, and `check` (tools/veil-onnx-check.c).
 */
#ifndef VEIL_ONNX_TOOL_INTERNAL_H
#define VEIL_ONNX_TOOL_INTERNAL_H

/** Prints the usage and the supported ops to stderr; returns 2. */
int usage(void);
/** The exit code of a library status (3 unsupported, 4 out of range, 1 other). */
int exit_code(int rc);
/** `veil-onnx check MODEL.onnx [--nparties N] [--batch N]`; returns the exit code. */
int cmd_check(int argc, char **argv);

#endif

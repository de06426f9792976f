/*
 * veil_onnx_internal.h — what the files of the veil-onnx tool share: the usage text, the
 * exit code of a library status, `check` (tools/veil-onnx-check.c) and `check-ranges`
 * (tools/veil-onnx-ranges.c).
 */
#ifndef VEIL_ONNX_TOOL_INTERNAL_H
#define VEIL_ONNX_TOOL_INTERNAL_H

/** Prints the usage and the supported ops to stderr; returns 2. */
int usage(void);
/** The exit code of a library status (3 unsupported, 4 out of range, 1 other). */
int exit_code(int rc);
/** `veil-onnx check MODEL.onnx [--nparties N] [--batch N]`; returns the exit code. */
int cmd_check(int argc, char **argv);
/** `veil-onnx check-ranges MODEL.onnx [--frac-bits F] [--batch N] IN...`; the exit code (4: a
 * node OVER). */
int cmd_check_ranges(int argc, char **argv);

/** The graph inputs of model into names / is_int (veil_onnx_list_inputs), checked against the
 * nin files given: 0, or the exit code after a message (1 unreadable model, 2 a count that
 * differs, 3 an input that is not a tensor). veil-onnx.c. */
int veil_onnx_cli_inputs(const char *model, int nin, char (*names)[128], int *is_int, int max);

#endif

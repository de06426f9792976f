/*
 * veil/data.h — reading and writing the files a Veil run consumes and produces: MNIST-style IDX
 * datasets (plain or gzip'ed), plaintext model weights (a safetensors-style file) and one
 * party's secret-shared tensors (a per-party share file bound to a session). Every reader
 * validates its input completely and fails with a status and a veil_last_error() message that
 * names the file and what is wrong; none of them aborts on bad bytes.
 */
#ifndef VEIL_DATA_H
#define VEIL_DATA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- IDX datasets (MNIST, Fashion-MNIST) ----------------------------------------------------- */

/** A set of count images of rows x cols unsigned bytes, with optional labels. */
typedef struct veil_dataset veil_dataset_t;

/**
 * Loads an IDX image file (magic 0x00000803, unsigned bytes, 3 dimensions) and optionally its
 * IDX label file (magic 0x00000801, 1 dimension); either may be gzip'ed (detected from the
 * content, not the name). labels_path NULL: no labels. check_labels != 0 additionally refuses a
 * label outside 0..9. Returns an owned dataset or NULL (veil_last_error(): the file, the
 * expected and actual sizes, ...). Thread-safe (no shared state).
 */
veil_dataset_t *veil_dataset_load_idx(const char *images_path, const char *labels_path,
                                      int check_labels);
/** Frees a dataset; NULL-safe; sets *d to NULL. */
void veil_dataset_destroy(veil_dataset_t **d);
/** Number of images, rows and columns of each image. */
size_t veil_dataset_count(const veil_dataset_t *d);
size_t veil_dataset_rows(const veil_dataset_t *d);
size_t veil_dataset_cols(const veil_dataset_t *d);
/** The raw pixels, count * rows * cols bytes, image after image (borrowed). */
const uint8_t *veil_dataset_pixels(const veil_dataset_t *d);
/** The labels, count bytes (borrowed), or NULL when loaded without labels. */
const uint8_t *veil_dataset_labels(const veil_dataset_t *d);
/**
 * Writes image index (0..count-1) as rows * cols doubles in [0, 1] (pixel / 255) into out.
 * VEIL_ERR_RANGE for a bad index.
 */
int veil_dataset_image_f64(const veil_dataset_t *d, size_t index, double *out);

/* ---- model weights ------------------------------------------------------------------------- */
/*
 * Weights file format (safetensors-style, all integers little-endian):
 *   8 bytes    H, the header length in bytes (1 <= H <= 100 MiB, H <= file length - 8)
 *   H bytes    a JSON object (UTF-8; trailing spaces allowed):
 *              {"<tensor name>": {"dtype": "F64"|"F32"|"I64"|"U64",
 *                                 "shape": [d0, d1, ...],          (0..8 non-negative ints)
 *                                 "data_offsets": [begin, end]},   (relative to the data area)
 *               ...,
 *               "__metadata__": {"model": "<model name>", "<key>": "<string>", ...}}
 *   the data   every tensor's bytes, row-major, at [8 + H + begin, 8 + H + end)
 * The reader is strict: duplicate keys, unknown dtypes or fields, a byte count that does not
 * match the shape, overlapping or out-of-range offsets, bytes after the JSON other than spaces,
 * and nesting beyond the above are errors.
 */
enum veil_dtype {
    VEIL_DTYPE_F64,
    VEIL_DTYPE_F32,
    VEIL_DTYPE_I64,
    VEIL_DTYPE_U64,
    VEIL_DTYPE_COUNT
};

#define VEIL_WEIGHTS_MAX_DIMS 8

/** An open weights file (its whole content is held in memory). */
typedef struct veil_weights veil_weights_t;

/** One tensor to write with veil_weights_write (data: numel * dtype size bytes, host order). */
struct veil_weights_tensor {
    const char *name;
    enum veil_dtype dtype;
    int ndim;
    size_t dims[VEIL_WEIGHTS_MAX_DIMS];
    const void *data;
};

/** Opens and validates a weights file. Returns an owned handle or NULL (veil_last_error()). */
veil_weights_t *veil_weights_open(const char *path);
/** Parses a weights file image held in memory (copied); name is used in messages. */
veil_weights_t *veil_weights_parse(const void *bytes, size_t len, const char *name);
/** Frees; NULL-safe; sets *w to NULL. */
void veil_weights_destroy(veil_weights_t **w);
/** The "model" metadata value, or NULL when the file has none (borrowed). */
const char *veil_weights_model(const veil_weights_t *w);
/** VEIL_OK when the file is for model, else VEIL_ERR_MISMATCH ("... is for model 'x', not 'y'"). */
int veil_weights_check_model(const veil_weights_t *w, const char *model);
/** Number of tensors, and the name of tensor i (file order; borrowed). */
size_t veil_weights_count(const veil_weights_t *w);
const char *veil_weights_name(const veil_weights_t *w, size_t i);
/** dtype, ndim and dims (VEIL_WEIGHTS_MAX_DIMS entries, any may be NULL) of tensor name;
 * VEIL_ERR_INVAL if absent. */
int veil_weights_info(const veil_weights_t *w, const char *name, enum veil_dtype *dtype,
                      int *ndim, size_t *dims);
/**
 * Converts tensor name to doubles in out (numel entries) after checking its shape against the
 * expected ndim/dims: VEIL_ERR_SHAPE "weights file X: tensor 'conv1.weight' has shape [6,1,5,5],
 * the model expects [6,3,5,5]"; VEIL_ERR_INVAL when the tensor is absent.
 */
int veil_weights_read_f64(const veil_weights_t *w, const char *name, int ndim,
                          const size_t *dims, double *out);
/**
 * Writes a weights file atomically (temporary file in the same directory, fsync, rename).
 * model may be NULL (no metadata). Names must be distinct, non-empty and not "__metadata__".
 */
int veil_weights_write(const char *path, const char *model, const struct veil_weights_tensor *t,
                       size_t n);

/* ---- per-party share files ----------------------------------------------------------------- */
/*
 * Share file format (integers little-endian): magic "VEILSHR1", u32 version (1), u32 kind
 * (0 arithmetic, 1 binary), u32 party, u32 nparties, 16 bytes session id, u32 name length L
 * (1..255), u32 ndim (0..8), ndim u64 dims, L name bytes, numel u64 words, then the 32-byte
 * SHA-256 of everything before it.
 */

/** What a share file is bound to: saved with it, and required to match on load. */
struct veil_share_file_id {
    uint8_t session[16];
    int party;
    int nparties;
    const char *name; /* model/tensor name, 1..255 bytes */
};

typedef struct veil_share veil_share_t;

/** Saves s with id atomically (temporary file, fsync, rename; mode 0600). */
int veil_share_save(const char *path, const veil_share_t *s, const struct veil_share_file_id *id);
/**
 * Loads a share saved by veil_share_save after verifying its SHA-256 and that it was saved for
 * exactly expect (session, party, nparties, name): otherwise NULL with VEIL_ERR_MISMATCH naming
 * the differing field, VEIL_ERR_FORMAT / VEIL_ERR_CRYPTO for a damaged file. Owned result.
 */
veil_share_t *veil_share_load(const char *path, const struct veil_share_file_id *expect);

#ifdef __cplusplus
}
#endif
#endif

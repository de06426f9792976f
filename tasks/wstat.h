/*
 * wstat.h — weight-stationary Beaver products for inference (Veil issue 7, beyond MPC-Pipe): the
 * dealer gives ONE mask B per weight tensor for the whole session (the weight stream of its wid,
 * tasks/preproc.h) and a fresh A and C = A.B per product (MATMUL_WS / CONV_WS items), so
 * E = W - B is opened once per session instead of once per inference. Every later product opens
 * only D = x - A. N-party semi-honest, exact ring operations over Z_2^64 (no truncation).
 *
 * USE. One struct veil_mpc_wstat per weight tensor: veil_mpc_wstat_init(m, &ws, wid) with a wid
 * the caller assigns (unique per weight tensor in the session, the same at every process), then
 * veil_mpc_matmul_ws / veil_mpc_conv2d_ws with that ws and the same w for every inference, then
 * veil_mpc_wstat_release. SPMD as every protocol of tasks/mpc.h: parties and the dealer (or a
 * recorder) make the same calls with the same shapes; the dealer's state carries shapes only.
 *
 * COSTS (N parties, bytes each party sends; one round per call either way; the dealer's traffic
 * is unchanged: the correction C per call, to the designated party):
 *   matmul_ws  x (a x b) . w (b x c):  first call 8 (N-1)(ab + bc), later calls 8 (N-1) ab
 *   conv2d_ws:                         first call 8 (N-1)(|x| + |w|), later calls 8 (N-1) |x|
 * Over R inferences the weight opens cost 8 (N-1) |w| once instead of R times; a primed state
 * (veil_mpc_wstat_prime) paid them before its first call, which then costs what a later one does.
 * A side effect: after the first call, A.E depends only on the material, so it runs before the
 * input arrives.
 *
 * SECURITY (semi-honest, any coalition of up to N-1 parties; the dealer is trusted as for every
 * item). What the coalition sees beyond its own inputs, over a whole session:
 *   - E = W - B, once. B is the sum of every party's weight-stream words; an honest party's words
 *     are PRG output of its own seed, unknown to the coalition, so B is uniform in Z_2^64 to it
 *     and E is a one-time pad of W: uniform and independent of W. B pads nothing else (one wid
 *     per weight tensor, refused twice below), so the pad is used once.
 *   - D_i = x_i - A_i per product. A_i comes from the item's own stream (a fresh index each
 *     call), uniform and independent of B, of E and of every other A_j: D_i pads x_i exactly as
 *     in the plain Beaver product.
 *   - its shares of A_i, B, C_i: B's shares are the same every call, but C_i's honest shares
 *     (or the designated party's correction, when d is in the coalition) include fresh honest
 *     stream words of item i, so they are uniform and independent across calls, as for MATMUL.
 * All of it is simulated by uniform values, so the reuse of B leaks nothing. It would leak as
 * soon as B masked a second value: opening W' - B next to W - B reveals W - W'. Hence:
 *   - a wid names ONE weight tensor for the whole session: veil_mpc_wstat_init refuses a wid
 *     already claimed in this context (VEIL_ERR_STATE), even after the first state's release;
 *   - a state is bound to the w tensor of its first call: a later call with another tensor
 *     (other data pointer or handle, other shape) is refused with VEIL_ERR_STATE;
 *   - W must not change in place while a state uses it — which the library cannot observe. So
 *     TRAINING MUST NOT USE THESE FUNCTIONS: an SGD step changes W, and W_t - B for every step
 *     would reveal every update W_t - W_{t-1} (the learning rate times a gradient, which leaks
 *     the training data). Training uses veil_mpc_matmul / veil_mpc_conv2d (fresh B per product).
 * Each party keeps its share of B from the first call (the state's b): later calls' material
 * leaves B out, neither expanded from the weight stream (DEALER, TRUSTED_FIRST_PARTY) nor read
 * (FILE, whose items still store it: storage, not traffic), and the products read the kept
 * share. Its words are the items' own, so the outputs are the same.
 *
 * Threads: like every protocol call, one thread per context.
 */
#ifndef VEIL_TASKS_WSTAT_H
#define VEIL_TASKS_WSTAT_H

#include "tasks/beaver.h"
#include "tasks/mpc.h"

#include <starpu.h>
#include <stddef.h>
#include <stdint.h>

/**
 * Session state of one weight tensor. Fields are read-only for callers; zero-initialise, then
 * veil_mpc_wstat_init. The public E = W - B and this party's share of B (owned, empty until the
 * first product at a party) and the identity of the bound w are kept here.
 */
struct veil_mpc_wstat {
    veil_mpc_t *m; /* the context it was initialised for */
    uint64_t wid;  /* the weight id (its weight stream) */
    int op;        /* 0 unbound; bound to a matmul (1) or a conv2d (2) */
    int ndim;      /* the bound w's shape */
    size_t dims[VEIL_MAX_DIMS];
    const uint64_t *w_data; /* the bound w's identity at a party (NULL elsewhere) */
    starpu_data_handle_t w_handle;
    struct veil_pub e; /* E = W - B at a party once opened; owned */
    struct veil_sec b; /* this party's share of B, kept from the first call; owned */
    uint64_t uses;     /* products run with this state */
};

/**
 * Initialises *ws for weight id wid in context m and claims wid for the rest of m's session.
 * Every process calls it with the same wid. Returns VEIL_OK; VEIL_ERR_INVAL (NULL argument);
 * VEIL_ERR_STATE when wid was already claimed in m (a second weight tensor would reuse the mask:
 * give it another wid) or when *ws is in use (initialised and not released); VEIL_ERR_NOMEM.
 * *ws must be zeroed (or released) before: a state with garbage fields is refused as in use.
 */
int veil_mpc_wstat_init(veil_mpc_t *m, struct veil_mpc_wstat *ws, uint64_t wid);

/**
 * Opens E = w - B for *ws ahead of its first product (a warm first run: veil_party_prepare does
 * it for every weight-stationary weight once the parameters are shared): this party's share of B
 * comes from the weight stream of ws's wid, or from the preprocessing file's first item of that
 * weight not yet consumed (nothing is consumed: the products then take their items as before,
 * without B, veil_mpc_ws_material). like is a MATMUL_WS or CONV_WS item of the weight (its kind
 * fixes the op, its mask size must be w's; its index and other params are not used). Binds *ws to
 * w; the products then open only D = x - A. One open of 8 (N-1) |w| bytes per party, no round
 * marked (the caller marks one for all it primes). SPMD as every call. Returns VEIL_OK;
 * VEIL_ERR_STATE (a state bound already, or not initialised for m), VEIL_ERR_INVAL (another kind
 * or weight id), VEIL_ERR_SHAPE (w and the mask differ in size), VEIL_ERR_MISMATCH (FILE: no
 * item of the weight left).
 */
int veil_mpc_wstat_prime(veil_mpc_t *m, struct veil_mpc_wstat *ws, const struct veil_sec *w,
                         const struct veil_preproc_item *like);

/**
 * Releases the state without waiting: E is handed to the context (freed at its next barrier),
 * *ws is zeroed. The wid stays claimed (it may never mask another tensor in this session).
 * NULL-safe and safe on a zeroed state.
 */
void veil_mpc_wstat_release(veil_mpc_t *m, struct veil_mpc_wstat *ws);

/** 1 once a product has run with ws (E opened at a party; bound to its w), 0 before. */
int veil_mpc_wstat_bound(const struct veil_mpc_wstat *ws);

/**
 * z = x . w as veil_mpc_matmul (x a x b, w b x c, 2-D arithmetic one-handle tensors; z a x c,
 * one handle), over a MATMUL_WS item (A fresh, B the session's mask of ws's wid, C = A.B):
 * D = x - A is opened, and E = w - B only on the first call with ws (kept in ws); then
 * z = C + D B + A E (+ D E at party 0). Rounds 1; bytes 8 (N-1)(ab + bc) on the first call,
 * 8 (N-1) ab afterwards. x's row count may change between calls; w may not.
 * Errors before anything is submitted: those of veil_mpc_matmul (VEIL_ERR_SHAPE/INVAL, messages
 * name "matmul_ws"); VEIL_ERR_INVAL for a NULL ws; VEIL_ERR_STATE when ws was not initialised for
 * m, or is bound to another w (other tensor identity or shape) or to a conv2d.
 */
int veil_mpc_matmul_ws(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *w,
                       struct veil_mpc_wstat *ws, struct veil_sec *z);

/**
 * y = conv2d(x, w) as veil_mpc_conv2d (geometry g, NCHW x, OIHW w, one handle each), over a
 * CONV_WS item: D = x - A opened every call, E = w - B only on the first call with ws. Rounds 1;
 * bytes 8 (N-1)(|x| + |w|) on the first call, 8 (N-1) |x| afterwards. The batch, input size,
 * stride and padding may change between calls; w may not. Errors as veil_mpc_matmul_ws (messages
 * name "conv2d_ws"; a state bound to a matmul is refused).
 */
int veil_mpc_conv2d_ws(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *w,
                       const struct veil_conv_geom *g, struct veil_mpc_wstat *ws,
                       struct veil_sec *y);

#endif

/* Tests veil_net_irecv_combine (a receive that folds the message into its handle), with 3 real
 * processes over loopback CURVE, in 100-byte chunks so that words straddle chunks. Each process
 * p has a vector of 20,000 words that a task fills with its own term v_p (party 0's task sleeps
 * 500 ms), sends it to both peers, then folds both peers' terms into it: 64-bit sums (tag 1) and
 * XOR (tag 2). Party 1 starts once party 0's folds are posted and party 2 once party 0's terms
 * are written (a word from party 0 each). Every process must end with v_0 + v_1 + v_2
 * (v_0 ^ v_1 ^ v_2): the sends, posted before the folds, carry the process's own term and the
 * folds wait for the task that writes it; at party 0 party 1's message comes before its fold can
 * start (kept as an early arrival, folded when the task is done) and party 2's after (folded as
 * it lands). Party 0 holds party 1's 160 KB message for its posted fold under an early-arrival
 * cap of 64 KiB: the cap counts only messages no receive was posted for. Refusals before anything
 * is posted: an unknown op, a vector of bytes. */
#include "config.h"
#include "net_test_util.h"

#include <starpu.h>
#include <unistd.h>

#define WORDS 20000 /* 160 KB: over the early-arrival cap below */

static void fill_cpu(void *buffers[], void *cl_arg)
{
    int who;
    starpu_codelet_unpack_args(cl_arg, &who);
    if (who == 0)
        usleep(500 * 1000);
    net_test_fill((uint8_t *)STARPU_VECTOR_GET_PTR(buffers[0]), WORDS * 8, (uint64_t)who);
}
static struct starpu_codelet fill_cl = {
    .cpu_funcs = {fill_cpu}, .nbuffers = 1, .modes = {STARPU_W}, .name = "test_fill_term"};

static int check(const uint64_t *got, enum veil_net_combine op, const char *what)
{
    uint64_t v[3][WORDS];
    for (int p = 0; p < 3; p++)
        net_test_fill((uint8_t *)v[p], sizeof v[p], (uint64_t)p);
    for (size_t i = 0; i < WORDS; i++) {
        const uint64_t want =
            op == VEIL_NET_COMBINE_XOR ? v[0][i] ^ v[1][i] ^ v[2][i] : v[0][i] + v[1][i] + v[2][i];
        if (got[i] != want) {
            fprintf(stderr, "FAIL: %s: word %zu is %016llx, want %016llx\n", what, i,
                    (unsigned long long)got[i], (unsigned long long)want);
            return 1;
        }
    }
    return 0;
}

static int party(const struct veil_harness_party *me, void *arg)
{
    struct veil_net_config cfg;
    struct veil_net_options opt;
    veil_net_t *net = NULL;
    if (net_test_config(me, arg, 0.5, 20, 1, &cfg))
        return 2;
    veil_net_options_defaults(&opt);
    opt.chunk_bytes = 100; /* words straddle chunks */
    if (me->id == 0)       /* party 2's messages come late, party 1's are held for posted folds */
        opt.early_cap_bytes = 64 << 10;
    const int started = net_test_start(&cfg, &opt, &net);
    if (started)
        return started;
    int bad = 0;
    static uint64_t sum[WORDS], x[WORDS];
    static uint8_t bytes[64];
    starpu_data_handle_t hs, hx, hb;
    starpu_vector_data_register(&hs, STARPU_MAIN_RAM, (uintptr_t)sum, WORDS, 8);
    starpu_vector_data_register(&hx, STARPU_MAIN_RAM, (uintptr_t)x, WORDS, 8);
    starpu_vector_data_register(&hb, STARPU_MAIN_RAM, (uintptr_t)bytes, sizeof bytes, 1);
    if (veil_net_irecv_combine(net, hs, (me->id + 1) % 3, 1, (enum veil_net_combine)3) !=
            VEIL_ERR_INVAL ||
        veil_net_irecv_combine(net, hb, (me->id + 1) % 3, 1, VEIL_NET_COMBINE_XOR) !=
            VEIL_ERR_INVAL ||
        !strstr(veil_last_error(), "8-byte words")) {
        fprintf(stderr, "FAIL: a bad op or a vector of bytes was not refused: %s\n",
                veil_last_error());
        bad = 1;
    }
    /* Party 1 starts once party 0's folds are posted, party 2 once party 0's term is written
     * (so that its messages find party 0's folds acquired): a word from party 0 each. */
    static uint64_t go;
    starpu_data_handle_t hgo;
    starpu_variable_data_register(&hgo, STARPU_MAIN_RAM, (uintptr_t)&go, sizeof go);
    if (me->id != 0 &&
        (veil_net_irecv(net, hgo, 0, 99) != VEIL_OK || veil_net_wait_all(net) != VEIL_OK)) {
        fprintf(stderr, "FAIL: the start word: %s\n", veil_last_error());
        bad = 1;
    }
    const struct {
        starpu_data_handle_t h;
        enum veil_net_combine op;
    } fold[2] = {{hs, VEIL_NET_COMBINE_ADD64}, {hx, VEIL_NET_COMBINE_XOR}};
    int rc = VEIL_OK;
    for (int k = 0; k < 2 && rc == VEIL_OK; k++) {
        const int who = me->id;
        rc = starpu_task_insert(&fill_cl, STARPU_W, fold[k].h, STARPU_VALUE, &who, sizeof who, 0)
                 ? VEIL_ERR_STARPU
                 : VEIL_OK;
        for (int q = 0; q < 3 && rc == VEIL_OK; q++)
            if (q != me->id)
                rc = veil_net_isend(net, fold[k].h, q, (uint64_t)k + 1);
        for (int q = 0; q < 3 && rc == VEIL_OK; q++)
            if (q != me->id)
                rc = veil_net_irecv_combine(net, fold[k].h, q, (uint64_t)k + 1, fold[k].op);
    }
    if (rc == VEIL_OK && me->id == 0) {
        rc = veil_net_isend(net, hgo, 1, 99);
        starpu_task_wait_for_all(); /* this party's terms are written */
        if (rc == VEIL_OK)
            rc = veil_net_isend(net, hgo, 2, 99);
    }
    if (rc == VEIL_OK)
        rc = veil_net_wait_all(net);
    if (rc != VEIL_OK) {
        fprintf(stderr, "FAIL: folding receives: %s\n", veil_last_error());
        bad = 1;
    }
    starpu_data_unregister(hs);
    starpu_data_unregister(hx);
    starpu_data_unregister(hb);
    starpu_data_unregister(hgo);
    if (rc == VEIL_OK)
        bad |= check(sum, VEIL_NET_COMBINE_ADD64, "64-bit sum") |
               check(x, VEIL_NET_COMBINE_XOR, "XOR");
    veil_net_close(&net);
    starpu_shutdown();
    if (!bad && net_test_verbose())
        fprintf(stderr, "ok: process %d holds the sum and the XOR of the three terms\n", me->id);
    return bad;
}

int main(void)
{
    return net_test_run(3, party, "folding receives among 3 processes");
}

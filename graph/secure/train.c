/*
 * train.c — secure training on an open session (include/veil/graph.h, "secure training"): SGD
 * steps (the whole plan walked: forward, backward, updates, with nothing revealed; under weight
 * averaging the replicas' mean after every average_every-th step, counted by me->steps), the opt-in
 * reveal of each example's true-class probability to one party, and the reveal of a parameter's
 * current value to its receiver. Everything goes through party.c's walk so costs, errors and
 * the failed-session rule are the same as veil_run's.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/secure/party_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a step needs of the plan: compiled for training, weights not stationary. */
static int check_training(veil_party_t *me, const char *what)
{
    int rc = veil_party_usable(me, what);
    if (rc != VEIL_OK)
        return rc;
    const veil_plan_t *p = me->p;
    if (!p->opts.training || p->loss < 0)
        return veil_error(VEIL_ERR_INVAL, "%s: plan '%s' was compiled for inference; compile it "
                          "with training = 1 to train (veil_run runs inference)", what, p->model);
    if (p->opts.weight_stationary)
        return veil_error(VEIL_ERR_UNSUPPORTED, "%s: plan '%s' uses weight-stationary "
                          "preprocessing, which assumes fixed weights; compile the training plan "
                          "with weight_stationary = 0", what, p->model);
    return VEIL_OK;
}

int veil_train_step(veil_party_t *me, const struct veil_feed *feeds, size_t nfeeds)
{
    int rc = check_training(me, "veil_train_step");
    if (rc == VEIL_OK) {
        me->x.average = veil_plan_average_due(me->p, me->steps + 1);
        me->x.step = me->steps + 1;
        rc = veil_party_walk(me, "veil_train_step", me->p->count, feeds, nfeeds, NULL, -2, NULL);
        me->x.average = 0;
    }
    if (rc == VEIL_OK)
        me->steps++;
    return rc;
}

int veil_train_step_reveal_loss(veil_party_t *me, const struct veil_feed *feeds, size_t nfeeds,
                                int to, double *probs, double *loss)
{
    const char *what = "veil_train_step_reveal_loss";
    int rc = check_training(me, what);
    if (rc != VEIL_OK)
        return rc;
    if (to < VEIL_ALL_PARTIES || to >= me->nparties)
        return veil_error(VEIL_ERR_INVAL, "%s: party %d is not in the session (0..%d, or "
                          "VEIL_ALL_PARTIES)", what, to, me->nparties - 1);
    const struct veil_node *ln = &me->p->nodes[me->p->loss];
    const size_t batch = me->p->nodes[ln->in[0]].dims[0];
    const int here = !me->is_dealer && (to == VEIL_ALL_PARTIES || to == me->self);
    double *pr = here ? malloc((batch ? batch : 1) * sizeof *pr) : NULL;
    if (here && !pr)
        return veil_error(VEIL_ERR_NOMEM, "%s: out of memory", what);
    me->x.average = veil_plan_average_due(me->p, me->steps + 1);
    me->x.step = me->steps + 1;
    rc = veil_party_walk(me, what, me->p->count, feeds, nfeeds, NULL, to, pr);
    me->x.average = 0;
    if (rc == VEIL_OK) {
        me->steps++;
        if (here) {
            /* the floor keeps log finite where the fixed-point probability rounded to 0 */
            const double floor_p = ldexp(1.0, -me->p->opts.frac_bits);
            double sum = 0.0;
            for (size_t r = 0; r < batch; r++)
                sum -= log(pr[r] > floor_p ? pr[r] : floor_p);
            if (loss)
                *loss = batch ? sum / (double)batch : 0.0;
            if (probs)
                memcpy(probs, pr, batch * sizeof *pr);
        }
    }
    free(pr);
    return rc;
}

uint64_t veil_party_steps(const veil_party_t *me)
{
    return me ? me->steps : 0;
}

int veil_party_joint_seed(veil_party_t *me, uint8_t seed[16])
{
    int rc = veil_party_usable(me, "veil_party_joint_seed");
    if (rc == VEIL_OK && !seed)
        rc = veil_error(VEIL_ERR_INVAL, "veil_party_joint_seed: NULL seed");
    if (rc == VEIL_OK && me->seed_state == 2) {
        /* restored by veil_party_load: the data order goes on where the checkpoint left it */
        memcpy(seed, me->joint_seed, 16);
        me->seed_state = 1;
        return VEIL_OK;
    }
    if (rc == VEIL_OK && (rc = veil_mpc_joint_seed(me->m, seed)) != VEIL_OK) {
        me->failed = 1;
        snprintf(me->fail_msg, sizeof me->fail_msg, "%s", veil_last_error());
    }
    if (rc == VEIL_OK) {
        memcpy(me->joint_seed, seed, 16);
        me->seed_state = 1;
    }
    return rc;
}

int veil_party_reveal_param(veil_party_t *me, const char *name, int to, double *out)
{
    const char *what = "veil_party_reveal_param";
    int rc = veil_party_usable(me, what);
    if (rc != VEIL_OK)
        return rc;
    const int i = name ? veil_plan_find(me->p, name) : -1;
    if (i < 0 || me->p->nodes[i].op != VEIL_OP_PARAM)
        return veil_error(VEIL_ERR_INVAL, "%s: plan '%s' has no parameter '%s'", what,
                          me->p->model, name ? name : "(null)");
    if (to < VEIL_ALL_PARTIES || to >= me->nparties)
        return veil_error(VEIL_ERR_INVAL, "%s: party %d is not in the session (0..%d, or "
                          "VEIL_ALL_PARTIES)", what, to, me->nparties - 1);
    const struct veil_sec *w = &me->x.val[i];
    if (w->numel == 0)
        return veil_error(VEIL_ERR_STATE, "%s: parameter '%s' is not shared yet (no run, step or "
                          "load so far)", what, name);
    struct veil_pub r;
    memset(&r, 0, sizeof r);
    rc = veil_mpc_reveal(me->m, w, to, &r);
    int wrc = veil_mpc_wait(me->m);
    if (rc == VEIL_OK)
        rc = wrc;
    if (rc == VEIL_OK && r.data && out)
        rc = veil_party_decode(me, &r, out);
    veil_mpc_release(me->m, &r);
    if (rc != VEIL_OK && rc != VEIL_ERR_NOMEM) {
        me->failed = 1;
        snprintf(me->fail_msg, sizeof me->fail_msg, "%s", veil_last_error());
    }
    return rc;
}

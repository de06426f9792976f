/* Tests each party's choice of network device, NUMA node and GPUs (sched/locality.c) and the
 * session's staging memory placed by it: on the synthetic 2-package x 4-GPU topology
 * (tests/data/2pkg-8gpu.xml, an InfiniBand NIC per package) party 0 takes ib0, NUMA node 0 (4
 * PUs) and GPUs 0-3, party 1 ib1, node 1 and GPUs 4-7, party 2 ib0 again; with the GPU and NIC
 * attached machine-wide (2pkg-machine-gpu.xml) parties spread over the two nodes by index and
 * both see the one GPU; StarPU's CUDA devices are set from the choice (GPUs 0-3 / 4-7) unless
 * STARPU_NCUDA fixed them, and left alone when no GPU is chosen; the choice prints as veil-topo
 * shows it; bad arguments are refused. On
 * this machine the staging memory the network pool uses is writable and freed, and it is
 * page-locked exactly when StarPU runs with a CUDA worker and the CUDA kernels are built in
 * (before starpu_init: never), and the network thread's binding call returns. */
#include "config.h"

#include "sched/sched_internal.h"
#include "test_util.h"

#include <pthread.h>
#include <starpu.h>
#include <stdlib.h>
#include <string.h>

static struct veil_topo *load(const char *name)
{
    char path[4096];
    const char *src = getenv("VEIL_TOP_SRCDIR");
    struct veil_topo *t = NULL;
    snprintf(path, sizeof(path), "%s/tests/data/%s", src ? src : ".", name);
    int rc = veil_topo_load(path, &t);
    VT_CHECK(rc == VEIL_OK && t != NULL, "load %s: %d %s", path, rc, veil_last_error());
    return t;
}

static void check_choice(const struct veil_topo *t, int party, const char *nic, int numa,
                         unsigned npus, int first_gpu, int ngpus)
{
    struct veil_locality c;
    int rc = veil_locality_choose(t, party, &c);
    VT_CHECK(rc == VEIL_OK, "party %d: %d %s", party, rc, veil_last_error());
    if (rc != VEIL_OK)
        return;
    const char *got = c.nic >= 0 ? t->nics[c.nic].name : "none";
    VT_CHECK(strcmp(got, nic) == 0, "party %d: NIC %s, want %s", party, got, nic);
    VT_CHECK(c.numa == numa && c.numa_obj != NULL && (int)c.numa_obj->os_index == numa,
             "party %d: NUMA %d, want %d", party, c.numa, numa);
    VT_CHECK(c.npus == npus, "party %d: %u PUs, want %u", party, c.npus, npus);
    VT_CHECK(c.ngpus == ngpus, "party %d: %d GPUs, want %d", party, c.ngpus, ngpus);
    for (int i = 0; i < c.ngpus && i < ngpus; i++)
        VT_CHECK(c.gpus[i] == first_gpu + i, "party %d: GPU %d is %d, want %d", party, i, c.gpus[i],
                 first_gpu + i);
}

/* StarPU's CUDA devices from party's choice: its GPUs, unless STARPU_NCUDA already fixed them. */
static void check_cuda_conf(const struct veil_topo *t, int party, int first_gpu, int ngpus)
{
    struct veil_locality c;
    struct starpu_conf conf;
    VT_CHECK(veil_locality_choose(t, party, &c) == VEIL_OK, "choose %d", party);
    starpu_conf_init(&conf);
    conf.ncuda = -1; /* as with STARPU_NCUDA unset */
    conf.use_explicit_workers_cuda_gpuid = 0;
    VT_CHECK(veil_locality_cuda_conf(&c, &conf) == 1 && conf.ncuda == ngpus &&
                 conf.use_explicit_workers_cuda_gpuid == 1,
             "party %d: StarPU given %d CUDA devices, want %d", party, conf.ncuda, ngpus);
    for (int i = 0; i < ngpus; i++)
        VT_CHECK(conf.workers_cuda_gpuid[i] == (unsigned)(first_gpu + i),
                 "party %d: CUDA worker %d on device %u, want %d", party, i,
                 conf.workers_cuda_gpuid[i], first_gpu + i);
    starpu_conf_init(&conf);
    conf.ncuda = 0; /* STARPU_NCUDA=0 */
    VT_CHECK(veil_locality_cuda_conf(&c, &conf) == 0 && conf.ncuda == 0 &&
                 conf.use_explicit_workers_cuda_gpuid == 0,
             "party %d: STARPU_NCUDA=0 overridden", party);
    c.ngpus = 0;
    starpu_conf_init(&conf);
    conf.ncuda = -1;
    conf.use_explicit_workers_cuda_gpuid = 0;
    VT_CHECK(veil_locality_cuda_conf(&c, &conf) == 0 && conf.ncuda == -1 &&
                 conf.use_explicit_workers_cuda_gpuid == 0,
             "no GPU chosen: conf changed");
}

static void check_synthetic(void)
{
    struct veil_topo *t = load("2pkg-8gpu.xml");
    if (t == NULL)
        return;
    check_choice(t, 0, "ib0", 0, 4, 0, 4);
    check_choice(t, 1, "ib1", 1, 4, 4, 4);
    check_choice(t, 2, "ib0", 0, 4, 0, 4);
    check_cuda_conf(t, 0, 0, 4);
    check_cuda_conf(t, 1, 4, 4);
    struct veil_locality c;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f != NULL && veil_locality_choose(t, 1, &c) == VEIL_OK) {
        VT_CHECK(veil_locality_print(t, &c, f) == VEIL_OK, "print");
        fclose(f);
        VT_CHECK(text && strstr(text, "network device: ib1\n") &&
                     strstr(text, "NUMA node: 1 (4 PUs") &&
                     strstr(text, "CUDA devices near it: 4 5 6 7\n"),
                 "printed choice:\n%s", text ? text : "");
        veil_test_log("%s", text ? text : "");
    } else if (f != NULL) {
        fclose(f);
    }
    free(text);
    VT_CHECK(veil_locality_choose(t, -1, &c) == VEIL_ERR_INVAL, "party -1");
    VT_CHECK(veil_locality_choose(t, 0, NULL) == VEIL_ERR_INVAL, "NULL result");
    VT_CHECK(veil_locality_choose(NULL, 0, &c) == VEIL_ERR_INVAL, "NULL topology");
    veil_topo_destroy(&t);

    t = load("2pkg-machine-gpu.xml");
    if (t == NULL)
        return;
    check_choice(t, 0, "eth0", 0, 2, 0, 1);
    check_choice(t, 1, "eth0", 1, 2, 0, 1);
    veil_topo_destroy(&t);
}

static void *bind_thread(void *arg)
{
    (void)arg;
    veil_locality_bind_io_thread();
    return NULL;
}

/* Staging memory as net/pool.c gets it; want_locked: page-locked expected. */
static void check_staging(int want_locked)
{
    size_t len = 1 << 20;
    int flags = -1;
    unsigned char *p = veil_locality_staging_alloc(len, &flags);
    VT_CHECK(p != NULL, "staging alloc: %s", veil_last_error());
    if (p == NULL)
        return;
    memset(p, 0xa5, len);
    VT_CHECK(p[0] == 0xa5 && p[len - 1] == 0xa5, "staging memory not writable");
    VT_CHECK(((uintptr_t)p & 63) == 0, "staging memory not 64-byte aligned");
    VT_CHECK(!!(flags & VEIL_STAGING_LOCKED) == want_locked, "page-locked %d, want %d", flags,
             want_locked);
    veil_test_log("staging flags %d (want page-locked %d)", flags, want_locked);
    veil_locality_staging_free(p, len, flags);
    veil_locality_staging_free(NULL, len, 0); /* no-op */
}

int main(void)
{
    check_synthetic();
    pthread_t th;
    VT_CHECK(pthread_create(&th, NULL, bind_thread, NULL) == 0 && pthread_join(th, NULL) == 0,
             "bind thread");
    check_staging(0); /* StarPU not running: never page-locked */
    int rc = veil_test_starpu_start();
    if (rc == 0) {
#ifdef VEIL_USE_CUDA
        int cuda = starpu_cuda_worker_get_count() > 0;
#else
        int cuda = 0;
#endif
        check_staging(cuda);
        veil_test_starpu_stop();
    }
    return veil_test_status();
}

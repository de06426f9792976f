/*
 * idle.h — StarPU's idle workers sleep while this process waits (net/idle.c): the one helper that
 * every blocking wait of a party goes through (veil_net_wait_all behind veil_mpc_wait, the
 * executor's look-ahead markers, the dealer's credit), so that a worker with nothing to do does
 * not spin while the process waits on the network. Never installed.
 */
#ifndef VEIL_NET_IDLE_H
#define VEIL_NET_IDLE_H

#include <starpu.h>
#include <stdint.h>

/** How often a waiter looks at StarPU's ready-task count while it waits (milliseconds). */
#define VEIL_NET_IDLE_POLL_MS 1

/** The step of a waiting loop, for a waiter holding a nonzero token of veil_net_idle_begin (so
 *  VEIL_IDLE_PAUSE is on; the environment is not read again at every turn): with no CUDA worker
 *  in the process, pauses the workers when no task is ready or running and resumes them when one
 *  is. Returns how many milliseconds the caller may sleep before it calls again:
 *  VEIL_NET_IDLE_POLL_MS while paused (a task another thread submits is seen within it), busy_ms
 *  otherwise. Any thread; call it with no StarPU lock held. */
long veil_net_idle_poll(long busy_ms);

/** A thread starts / ends a wait built on veil_net_idle_poll (veil_net_wait_all): between the
 *  two, StarPU's idle workers also pause themselves at their first empty turn when no task is
 *  ready or running (an idle hook), instead of at the waiter's next poll. begin returns the token
 *  to give end (0 when VEIL_IDLE_PAUSE is off); end resumes the workers if they are paused.
 *  Any thread; no StarPU lock held; veil_net_idle_wait_flag does both itself. */
int veil_net_idle_begin(void);
void veil_net_idle_end(int token);

/** A network session opens / closes (net/mesh.c): while one is open the idle hook pauses the
 *  workers whenever nothing is ready or running, waiting or not, and every readiness must kick
 *  (see net/idle.c). open returns the token for close (0 when VEIL_IDLE_PAUSE is off); close
 *  resumes the workers, so StarPU may shut down after it. */
int veil_net_idle_session_open(void);
void veil_net_idle_session_close(int token);

/** Resumes the workers if they are paused and a task is ready or running (any thread): call it
 *  after anything that may make a task ready (the I/O thread after each handle it releases, every
 *  task submission, an application thread's starpu_data_release). A kick that finds nothing ready
 *  leaves them asleep. Wakes no waiter (they look again within VEIL_NET_IDLE_POLL_MS). Never
 *  blocks. */
void veil_net_idle_kick(void);

/** A StarPU callback (a task's callback_func, an acquire's callback): arg is the int a waiter of
 *  veil_net_idle_wait_flag reads; sets it to 1 and wakes that waiter. Takes a mutex for a few
 *  instructions, never waits otherwise, so it may run on a worker or a driver thread. */
void veil_net_idle_done_cb(void *arg);

/** Blocks until *done was set by veil_net_idle_done_cb; meanwhile the workers are paused
 *  whenever no task is ready or running (veil_net_idle_poll). Returns with them running. */
void veil_net_idle_wait_flag(const int *done);

/** starpu_task_wait(t) for a non-detached task submitted with callback_func
 *  veil_net_idle_done_cb and callback_arg done, pausing as veil_net_idle_wait_flag does.
 *  Returns starpu_task_wait's status. */
int veil_net_idle_wait_task(struct starpu_task *t, const int *done);

/** starpu_data_acquire(h, mode) on main RAM, pausing while the data is not there (a receive the
 *  peer has not sent yet). 0, or StarPU's error; release with starpu_data_release. */
int veil_net_idle_acquire(starpu_data_handle_t h, enum starpu_data_access_mode mode);

/** How many times this process's workers were paused while it waited, and for how many seconds
 *  in all (a pause still running counts up to now); for tests and benchmarks. */
uint64_t veil_net_idle_pauses(void);
double veil_net_idle_paused_s(void);

#endif

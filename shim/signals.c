/* The program's signal handlers, run through a trampoline that marks the
 * thread as running one (sg_in_handler in state.h). */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <pthread.h>
#include <string.h>

#include "state.h"

/* Not instrumented by ThreadSanitizer: its runtime installs its own
 * handlers through sigaction() (this one, via RTLD_NEXT) before it is ready
 * to see any instrumented code run, and it runs handlers itself. */
#define NOT_TRACED __attribute__((no_sanitize("thread")))

SG_THREAD_LOCAL unsigned sg_handler_depth;
/* The outermost handler's signal, and whether it was installed with
 * SA_NODEFER (its signal then is not blocked while it runs). */
static SG_THREAD_LOCAL int outer_sig;
static SG_THREAD_LOCAL bool outer_nodefer;

/* The program's handler of each signal, in one of two slots: a new one is
 * written into the slot not in use, then made current, so that a handler
 * running meanwhile reads a whole one.  act: the action as the program gave
 * it, returned to it as the old one.  No lock (sigaction() is
 * async-signal-safe): a second change of the same signal at the same time
 * is installed as given, without the trampoline. */
static struct sigaction act[_NSIG][2];
static unsigned char current[_NSIG];
static bool changing[_NSIG];

static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static __sighandler_t (*real_signal)(int, __sighandler_t);
static __sighandler_t (*real_sysv_signal)(int, __sighandler_t);

NOT_TRACED static void resolve(void)
{
	if (!__atomic_load_n(&real_sigaction, __ATOMIC_ACQUIRE)) {
		real_signal = dlsym(RTLD_NEXT, "signal");
		real_sysv_signal = dlsym(RTLD_NEXT, "sysv_signal");
		__atomic_store_n(&real_sigaction, dlsym(RTLD_NEXT, "sigaction"), __ATOMIC_RELEASE);
	}
}

NOT_TRACED static void trampoline(int sig, siginfo_t *info, void *uc)
{
	const struct sigaction *a = &act[sig][__atomic_load_n(&current[sig], __ATOMIC_ACQUIRE)];
	bool siginfo = a->sa_flags & SA_SIGINFO;
	void (*with_info)(int, siginfo_t *, void *) = a->sa_sigaction;
	__sighandler_t plain = a->sa_handler; /* the same union member, read as the other type */

	if (!sg_handler_depth++) {
		outer_sig = sig;
		outer_nodefer = a->sa_flags & SA_NODEFER;
	}
	if (siginfo)
		with_info(sig, info, uc);
	else
		plain(sig);
	sg_handler_depth--;
}

NOT_TRACED bool sg_in_handler_slow(void)
{
	sigset_t now;

	/* Left by siglongjmp, which restores the mask: the handler's signal is
	 * no longer blocked. */
	if (!outer_nodefer && pthread_sigmask(SIG_BLOCK, NULL, &now) == 0 && !sigismember(&now, outer_sig)) {
		sg_handler_depth = 0;
		return false;
	}
	return true;
}

NOT_TRACED static bool wraps(const struct sigaction *a)
{
	return a->sa_flags & SA_SIGINFO ? a->sa_sigaction != NULL
					: a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}

/* Installs what the program asked for as given, or through the trampoline.
 * *old, if not NULL, as the program gave it. */
NOT_TRACED static int install(int sig, const struct sigaction *want, struct sigaction *old)
{
	struct sigaction through, was;
	unsigned char slot;
	int ret;

	if (sig <= 0 || sig >= _NSIG || !want || !wraps(want) ||
	    __atomic_exchange_n(&changing[sig], true, __ATOMIC_ACQUIRE)) {
		ret = real_sigaction(sig, want, &was);
		if (ret == 0 && old)
			*old = sig > 0 && sig < _NSIG && was.sa_sigaction == trampoline
				       ? act[sig][__atomic_load_n(&current[sig], __ATOMIC_ACQUIRE)]
				       : was;
		return ret;
	}
	slot = !__atomic_load_n(&current[sig], __ATOMIC_RELAXED);
	act[sig][slot] = *want;
	through = *want;
	through.sa_sigaction = trampoline;
	through.sa_flags |= SA_SIGINFO;
	/* The old action is the current slot's: read it before the switch. */
	ret = real_sigaction(sig, &through, &was);
	if (ret == 0) {
		if (old)
			*old = was.sa_sigaction == trampoline ? act[sig][!slot] : was;
		__atomic_store_n(&current[sig], slot, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&changing[sig], false, __ATOMIC_RELEASE);
	return ret;
}

NOT_TRACED SG_EXPORT int sigaction(int sig, const struct sigaction *want, struct sigaction *old)
{
	resolve();
	return install(sig, want, old);
}

/* signal() and sysv_signal() with glibc's own semantics (its flags, and
 * siginterrupt()'s): made first, then read back and put through the
 * trampoline. */
NOT_TRACED static __sighandler_t rewrap(int sig, __sighandler_t handler, __sighandler_t prev)
{
	struct sigaction now;

	if (prev == SIG_ERR || handler == SIG_DFL || handler == SIG_IGN || handler == SIG_ERR ||
	    real_sigaction(sig, NULL, &now) < 0 || now.sa_handler != handler)
		return prev;
	(void)install(sig, &now, NULL);
	return prev;
}

/* The old handler the program gave, not the trampoline. */
NOT_TRACED static __sighandler_t program_handler(int sig, __sighandler_t prev)
{
	struct sigaction ours = {.sa_sigaction = trampoline};

	if (sig <= 0 || sig >= _NSIG || prev != ours.sa_handler)
		return prev;
	return act[sig][__atomic_load_n(&current[sig], __ATOMIC_ACQUIRE)].sa_handler;
}

NOT_TRACED SG_EXPORT __sighandler_t signal(int sig, __sighandler_t handler)
{
	resolve();
	return rewrap(sig, handler, program_handler(sig, real_signal(sig, handler)));
}

NOT_TRACED SG_EXPORT __sighandler_t sysv_signal(int sig, __sighandler_t handler)
{
	resolve();
	return rewrap(sig, handler, program_handler(sig, real_sysv_signal(sig, handler)));
}

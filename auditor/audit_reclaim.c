#include "audit_reclaim.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "creator_store.h"
#include "reclaim.h"
#include "shm_files.h"
#include "shm_mounts.h"
#include "text.h"

struct audit_reclaim {
	double interval;
	struct sg_roots extra;
	enum audit_reclaim_scope scope;
	bool ignore_unreadable, dry_run;
	bool said_node_unknown; /* once: pid 1's namespace cannot be read */
	bool said_unreadable; /* once: every pass would say it again */
	bool said_records;    /* the same for records that cannot be read */
	struct sg_creator_store records; /* shmguard watch's, this pass's */
	bool have_records;
	int stop_fd; /* an eventfd: written to end the passes */
	pthread_t thread;
	bool finished;
	pthread_mutex_t lock; /* guards totals */
	struct audit_reclaim_totals totals;
};

/* Each file removed is said on stderr, as sweep says it; what is kept is
 * not (every pass would repeat it): `shmguard sweep --node --dead
 * --dry-run` shows why. */
static void said(const struct sg_reclaim_decision *d, void *ctx)
{
	const struct sg_shm_listing *l = ctx;
	char path[SG_PATH_MAX + SG_NAME_MAX + 64], esc[SG_ESCAPED_MAX];

	if (strcmp(d->verdict, "removed") != 0 && strcmp(d->verdict, "would remove") != 0 &&
	    strcmp(d->verdict, "failed") != 0)
		return;
	snprintf(path, sizeof(path), "%s/%s", l->shown[d->root], d->name);
	fprintf(stderr, "shmguard audit: reclaim: %s %s (%llu bytes): %s\n", d->verdict,
		sg_text_escape(path, esc, sizeof(esc)), (unsigned long long)d->bytes, d->why);
}

/* Reclaims in each root of l (listed); adds to the pass's figures. */
static void reclaim_listing(struct audit_reclaim *r, struct sg_shm_listing *l, struct audit_reclaim_totals *t)
{
	const struct sg_reclaim_opts o = {.dead = true,
					  .ignore_unreadable = r->ignore_unreadable,
					  .dry_run = r->dry_run,
					  .records = r->have_records ? &r->records : NULL};
	char err[SG_PATH_MAX + 160], esc[SG_ESCAPED_MAX];
	struct sg_reclaim_outcome out = {0};

	if (l->proc->holders.unreadable && !r->ignore_unreadable && !r->said_unreadable) {
		char comm[32];
		r->said_unreadable = true;
		fprintf(stderr,
			"shmguard audit: reclaim: %u %s cannot be read, e.g. %u (%s): nothing is reclaimed while "
			"they could be using the files (--reclaim-ignore-unreadable: reclaim anyway); said once\n",
			SG_PLURAL(l->proc->holders.unreadable, "process", "processes"), l->proc->holders.first_unreadable,
			sg_text_escape(sg_comm(l->proc->holders.first_unreadable, comm, sizeof(comm)), esc, sizeof(esc)));
	}
	for (unsigned k = 0; k < l->roots.n; k++)
		if (sg_reclaim_root(l, k, &o, &out, said, l, err, sizeof(err)) < 0) {
			fprintf(stderr, "shmguard audit: reclaim: %s\n", sg_text_escape(err, esc, sizeof(esc)));
			t->failed++;
		}
	t->files += out.removed;
	t->bytes += out.bytes;
	t->failed += out.failed;
}

/* A listing of the pass that could not be read. */
static void list_failed(const char *err, void *ctx)
{
	char esc[SG_ESCAPED_MAX];

	fprintf(stderr, "shmguard audit: reclaim: %s\n", sg_text_escape(err, esc, sizeof(esc)));
	((struct audit_reclaim_totals *)ctx)->failed++;
}

/* Whether dir is the directory of one of the mounts. */
static bool among_mounts(const struct sg_shm_mounts *ms, const char *dir)
{
	struct stat st;

	if (stat(dir, &st) < 0)
		return false;
	for (size_t i = 0; i < ms->n; i++)
		if (ms->m[i].kdev == sg_kdev(st.st_dev) && ms->m[i].dir_ino == st.st_ino)
			return true;
	return false;
}

/* The creator recorder's records, complete up to this pass's start where
 * one runs (this process's own with --record-creators); none where none ran.
 * Records that cannot be trusted are said once and not used. */
static void load_records(struct audit_reclaim *r)
{
	char why[SG_PATH_MAX + 160], esc[SG_ESCAPED_MAX];
	int sd = sg_store_open_dir(false, why, sizeof(why));

	r->have_records = false;
	if (sd < 0 && errno == ENOENT)
		return;
	if (sd >= 0) {
		r->have_records = sg_store_load_current(&r->records, sd, SG_STORE_WAIT_MS, why, sizeof(why)) == 0;
		close(sd);
	}
	if (!r->have_records && !r->said_records) {
		r->said_records = true;
		fprintf(stderr, "shmguard audit: reclaim: shmguard watch's records are not used: %s; said once\n",
			sg_text_escape(why, esc, sizeof(esc)));
	}
}

/* Keeps the mounts of this mount namespace only. */
const char *audit_reclaim_scope_name(enum audit_reclaim_scope s)
{
	switch (s) {
	case AUDIT_RECLAIM_OWN_NAMESPACE: return "own namespace";
	case AUDIT_RECLAIM_PODS: return "pods";
	case AUDIT_RECLAIM_PODS_AND_NODE: return "pods and node";
	}
	return "?";
}

/* Whether m is the node's own /dev/shm: in this process's mount namespace
 * (the host's, for an agent run as a service) or in pid 1's (the host's,
 * for an agent in a pod with hostPID).  init_ns 0: pid 1's namespace
 * could not be read, so only this process's counts as the node's. */
static bool node_own(const struct sg_shm_mount *m, uint64_t init_ns)
{
	return m->own_ns || (init_ns && m->mntns == init_ns);
}

/* Keeps the mounts of ms that r's scope covers; counts those of the node
 * left alone. */
static void in_scope(struct audit_reclaim *r, struct sg_shm_mounts *ms, struct audit_reclaim_totals *t)
{
	uint64_t init_ns = 0;
	struct stat st;
	size_t n = 0;

	if (r->scope == AUDIT_RECLAIM_PODS) {
		if (stat("/proc/1/ns/mnt", &st) == 0)
			init_ns = st.st_ino;
		else if (!r->said_node_unknown) {
			r->said_node_unknown = true;
			fprintf(stderr, "shmguard audit: reclaim: cannot read pid 1's mount namespace (%s): only this "
					"process's /dev/shm is taken for the node's own and left alone; said once\n",
				strerror(errno));
		}
	}
	for (size_t i = 0; i < ms->n; i++) {
		bool keep = r->scope == AUDIT_RECLAIM_OWN_NAMESPACE ? ms->m[i].own_ns
			  : r->scope == AUDIT_RECLAIM_PODS ? !node_own(&ms->m[i], init_ns)
			  : true;

		if (keep) {
			ms->m[n++] = ms->m[i];
		} else {
			t->node_roots_left += r->scope == AUDIT_RECLAIM_PODS;
			close(ms->m[i].dfd);
		}
	}
	ms->n = n;
}

/* One pass: the roots in scope and those given, SG_MAX_ROOTS to a
 * listing, /proc read once for them all. */
static void pass(struct audit_reclaim *r)
{
	struct audit_reclaim_totals t = {0};
	struct sg_shm_pass p = {0};
	struct sg_shm_listing *l = NULL;
	struct sg_roots extra = {0};
	struct sg_shm_mounts ms;
	char err[SG_PATH_MAX + 160], esc[SG_ESCAPED_MAX];
	int ret = sg_shm_mounts_scan(&ms, NULL, 0);

	load_records(r);
	if (ret < 0) {
		fprintf(stderr, "shmguard audit: reclaim: cannot read /proc: %s\n", strerror(-ret));
		t.failed++;
		goto cleanup;
	}
	/* The roots given that are none of the mounts found, the mounts
	 * left alone included: those are the mounts' business. */
	for (unsigned k = 0; k < r->extra.n; k++)
		if (!among_mounts(&ms, r->extra.dir[k])) {
			strcpy(extra.dir[extra.n], r->extra.dir[k]);
			extra.len[extra.n++] = r->extra.len[k];
		}
	in_scope(r, &ms, &t);
	t.roots = ms.n + extra.n;
	if ((ret = sg_shm_pass_add_mounts(&p, &ms, NULL, 0)) < 0 || (extra.n && !(l = sg_shm_pass_add(&p)))) {
		fprintf(stderr, "shmguard audit: reclaim: %s\n", strerror(ret < 0 ? -ret : ENOMEM));
		t.failed++;
		goto free_pass;
	}
	if (extra.n)
		l->roots = extra;
	if (sg_shm_pass_list(&p, list_failed, &t, err, sizeof(err)) < 0) {
		fprintf(stderr, "shmguard audit: reclaim: %s\n", sg_text_escape(err, esc, sizeof(esc)));
		t.failed++;
	}
	for (size_t i = 0; i < p.n; i++)
		if (p.l[i].listed)
			reclaim_listing(r, &p.l[i], &t);
free_pass:
	sg_shm_pass_free(&p);
	sg_shm_mounts_free(&ms);
cleanup:
	if (r->have_records)
		sg_store_free(&r->records);
	r->have_records = false;
	pthread_mutex_lock(&r->lock);
	r->totals.passes++;
	r->totals.files += t.files;
	r->totals.bytes += t.bytes;
	r->totals.failed += t.failed;
	r->totals.roots = t.roots;
	r->totals.node_roots_left = t.node_roots_left;
	pthread_mutex_unlock(&r->lock);
}

static void *passes(void *opaque)
{
	struct audit_reclaim *r = opaque;
	struct pollfd p = {.fd = r->stop_fd, .events = POLLIN};
	int ms = r->interval * 1000 > 86400000.0 ? 86400000 : (int)(r->interval * 1000), n;

	for (;;) {
		pass(r);
		do
			n = poll(&p, 1, ms);
		while (n < 0 && errno == EINTR);
		if (n != 0)
			return NULL; /* stopped (or poll broke: no more passes) */
	}
}

struct audit_reclaim *audit_reclaim_start(const struct audit_reclaim_opts *o, char *err, size_t errlen)
{
	struct audit_reclaim *r = calloc(1, sizeof(*r));
	int ret;

	if (!r) {
		snprintf(err, errlen, "--reclaim-dead: out of memory");
		return NULL;
	}
	r->interval = o->interval;
	r->extra = *o->extra;
	r->scope = o->scope;
	r->ignore_unreadable = o->ignore_unreadable;
	r->dry_run = o->dry_run;
	pthread_mutex_init(&r->lock, NULL);
	if ((r->stop_fd = eventfd(0, EFD_CLOEXEC)) < 0) {
		snprintf(err, errlen, "--reclaim-dead: %s", strerror(errno));
		goto fail;
	}
	if ((ret = pthread_create(&r->thread, NULL, passes, r)) != 0) {
		snprintf(err, errlen, "--reclaim-dead: cannot start its thread: %s", strerror(ret));
		close(r->stop_fd);
		goto fail;
	}
	return r;
fail:
	pthread_mutex_destroy(&r->lock);
	free(r);
	return NULL;
}

void audit_reclaim_totals(struct audit_reclaim *r, struct audit_reclaim_totals *t)
{
	if (!r) {
		memset(t, 0, sizeof(*t));
		return;
	}
	pthread_mutex_lock(&r->lock);
	*t = r->totals;
	pthread_mutex_unlock(&r->lock);
}

enum audit_reclaim_scope audit_reclaim_scope(const struct audit_reclaim *r)
{
	return r->scope;
}

void audit_reclaim_finish(struct audit_reclaim *r)
{
	uint64_t one = 1;

	if (!r || r->finished)
		return;
	r->finished = true;
	/* Adding 1 to this eventfd cannot fail: it fails only past 2^64 - 2. */
	ssize_t n = write(r->stop_fd, &one, sizeof(one));
	(void)n;
	pthread_join(r->thread, NULL);
	close(r->stop_fd);
}

void audit_reclaim_free(struct audit_reclaim *r)
{
	if (!r)
		return;
	audit_reclaim_finish(r);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

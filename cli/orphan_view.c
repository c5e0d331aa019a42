#include "orphan_view.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "size.h"
#include "text.h"

void orphan_view_load(struct orphan_view *v)
{
	int sd;

	*v = (struct orphan_view){0};
	if ((sd = sg_store_open_dir(false, v->why, sizeof(v->why))) < 0) {
		v->present = errno != ENOENT;
		if (!v->present)
			v->why[0] = '\0';
		return;
	}
	v->present = true;
	if (sg_store_load_current(&v->store, sd, SG_STORE_WAIT_MS, v->why, sizeof(v->why)) == 0)
		v->why[0] = '\0';
	close(sd);
}

void orphan_view_free(struct orphan_view *v)
{
	sg_store_free(&v->store);
}

const struct sg_creator_rec *orphan_view_record(const struct orphan_view *v, const struct sg_shm_file *f)
{
	return sg_orphan_record(&v->store, f);
}

/* Whether process pid (started at start_ticks, numbered in r's pidns)
 * runs, as the listing's creators say (they only cache what /proc shows). */
static const char *process_state(const struct sg_shm_listing *l, const struct sg_creator_rec *r, uint32_t pid,
				 uint64_t start_ticks)
{
	struct sg_tag t = {.pid = (pid_t)pid, .start_ticks = start_ticks, .pidns = r->pidns};

	return pid ? sg_creator_state_name(sg_creators_judge(&l->proc->creators, &t, NULL))
		   : "unknown";
}

static const char *state_of(const struct sg_shm_listing *l, const struct sg_creator_rec *r)
{
	return process_state(l, r, r->pid, r->start_ticks);
}

/* lead and each process with its state ("LEAD pid 5 (dead), pid 3
 * (alive)"), then "and others not recorded" when cut; "" when none. */
static const char *processes_text(const struct sg_shm_listing *l, const struct sg_creator_rec *r,
				  const struct sg_rec_process *p, uint32_t n, bool cut, const char *lead, char *buf,
				  size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s pid %u (%s)", i ? "," : lead, p[i].pid,
					 process_state(l, r, p[i].pid, p[i].start_ticks));
	if (cut && used < len)
		snprintf(buf + used, len - used, "%s others not recorded", n ? " and" : lead);
	return buf;
}

/* ", started by pid 5 (dead), pid 3 (alive)": its parent first, up to its
 * instance's start. */
static const char *ancestors_text(const struct sg_shm_listing *l, const struct sg_creator_rec *r, char *buf,
				  size_t len)
{
	return processes_text(l, r, r->ancestors, r->nancestors, r->flags & SG_REC_ANCESTORS_CUT, ", started by", buf,
			      len);
}

const char *orphan_view_creator(const struct orphan_view *v, const struct sg_shm_listing *l,
				const struct sg_shm_file *f, char *buf, size_t len)
{
	const struct sg_creator_rec *r = orphan_view_record(v, f);

	if (!r)
		return NULL;
	snprintf(buf, len, "%u (%s)", r->pid, state_of(l, r));
	return buf;
}

/* ", opened by pid 7 (alive), pid 9 (dead)"; "" when nobody else opened it. */
static const char *attachers_text(const struct sg_shm_listing *l, const struct sg_creator_rec *r, char *buf,
				  size_t len)
{
	return processes_text(l, r, r->attachers, r->nattachers, r->flags & SG_REC_ATTACHERS_LOST, ", opened by", buf,
			      len);
}

static const char *cgroup_word(uint64_t id)
{
	static const char *words[] = {[SG_CGROUP_UNKNOWN] = "unknown", [SG_CGROUP_ALIVE] = "exists",
				      [SG_CGROUP_GONE] = "gone"};

	return words[id ? sg_cgroup_state(id) : SG_CGROUP_UNKNOWN];
}

void orphan_view_print(const struct orphan_view *v, const struct sg_shm_listing *l)
{
	char path[SG_PATH_MAX + SG_NAME_MAX + 2], name[SG_ESCAPED_MAX], comm[SG_ESCAPED_MAX], cg[SG_ESCAPED_MAX];
	char others[SG_REC_ATTACHERS * 40 + 64], started[SG_REC_ANCESTORS * 40 + 64];
	bool header = false;

	if (v->why[0])
		printf("unknown: the creator records could not be read (%s)\n", v->why);
	for (size_t i = 0; i < l->n; i++) {
		const struct sg_shm_file *f = &l->files[i];
		const struct sg_creator_rec *r = orphan_view_record(v, f);

		if (!r)
			continue;
		if (!header)
			printf("creators recorded (audit --record-creators, or watch; files the shim did not tag):\n");
		header = true;
		struct sg_orphan_verdict d = sg_orphan_of(l, f, r, false);
		snprintf(path, sizeof(path), "%s/%s", l->roots.dir[f->root], f->name);
		sg_text_escape(path, name, sizeof(name));
		sg_text_escape(r->comm, comm, sizeof(comm));
		sg_text_escape(r->cgroup[0] ? r->cgroup : "?", cg, sizeof(cg));
		printf("  %s: pid %u (%s, %s) in cgroup %s (%s, %s)%s%s: %s: %s\n", name, r->pid, comm, state_of(l, r),
		       cg, d.shared ? "shared" : "its own", cgroup_word(r->cgroup_id),
		       ancestors_text(l, r, started, sizeof(started)), attachers_text(l, r, others, sizeof(others)),
		       d.proven ? "orphan" : "kept",
		       d.proven ? d.proof : d.missing);
	}
}

json_t *orphan_view_json(const struct orphan_view *v, const struct sg_shm_listing *l, const struct sg_shm_file *f)
{
	const struct sg_creator_rec *r = orphan_view_record(v, f);
	json_t *o;

	if (!r)
		return json_null();
	struct sg_orphan_verdict d = sg_orphan_of(l, f, r, false);
	o = json_pack("{s:i, s:s, s:I, s:b, s:b, s:s}", "creator_pid", (int)r->pid, "creator_state",
		      state_of(l, r), "cgroup_id", (json_int_t)r->cgroup_id, "cgroup_shared",
		      d.shared, "orphan", d.proven, "reason", d.proven ? d.proof : d.missing);
	cli_json_set_text(o, "command", r->comm);
	cli_json_set_text(o, "cgroup", r->cgroup[0] ? r->cgroup : NULL);
	json_t *att = json_array();
	for (uint32_t i = 0; i < r->nattachers; i++)
		json_array_append_new(att, json_pack("{s:i, s:s}", "pid", (int)r->attachers[i].pid, "state",
						     process_state(l, r, r->attachers[i].pid,
								   r->attachers[i].start_ticks)));
	json_object_set_new(o, "attachers", att);
	json_object_set_new(o, "attachers_lost", json_boolean(r->flags & SG_REC_ATTACHERS_LOST));
	json_t *anc = json_array();
	for (uint32_t i = 0; i < r->nancestors; i++)
		json_array_append_new(anc, json_pack("{s:i, s:s}", "pid", (int)r->ancestors[i].pid, "state",
						     process_state(l, r, r->ancestors[i].pid,
								   r->ancestors[i].start_ticks)));
	json_object_set_new(o, "ancestors", anc);
	json_object_set_new(o, "ancestors_cut", json_boolean(r->flags & SG_REC_ANCESTORS_CUT));
	return o;
}

void orphan_view_untagged(const struct orphan_view *v, const struct sg_shm_listing *l, FILE *out)
{
	uint64_t bytes = 0;
	size_t n = 0;
	char b[16];

	for (size_t i = 0; i < l->n; i++) {
		const struct sg_shm_file *f = &l->files[i];
		if (!f->tagged && !f->journal_like && f->linked && !orphan_view_record(v, f)) {
			n++;
			bytes += f->bytes;
		}
	}
	if (!n)
		return;
	fprintf(out,
		"untagged: %zu %s, %llu bytes (%s) with no owner record: neither the shim's tag nor a creator "
		"record (audit --record-creators, shmguard watch), so --dead cannot prove them orphans.  %s; or preload the shim (shmguard "
		"run); --glob GLOB --older-than DURATION removes untagged files by name and age\n",
		SG_PLURAL(n, "file", "files"), (unsigned long long)bytes, sg_human_bytes(bytes, b, sizeof(b)),
		v->why[0] ? "The creator records could not be read (see above)"
		: v->present ? "Files created while the recorder ran have records: they were made before it, or past its "
			     "bounds"
			   : "Run the node agent with --record-creators, or shmguard watch (as root, before the programs "
			     "start): every file created from then on gets a record");
}

/* The creator records of `shmguard watch` as `ls` and `sweep` use them:
 * which untagged file has one, and which proof of an orphan holds for it
 * or is missing (host/orphan_proof.h).  The shim's tag, where there is one,
 * wins: a tagged file is judged by its tag alone. */
#ifndef SHMGUARD_ORPHAN_VIEW_H
#define SHMGUARD_ORPHAN_VIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "creator_store.h"
#include "orphan_proof.h"
#include "shm_files.h"

struct orphan_view {
	struct sg_creator_store store;
	bool present;   /* the store's directory exists (watch ran since boot) */
	char why[256];  /* why the records could not be read, "" when they were */
};

/* Reads the records, if any; never fails (why says what went wrong). */
void orphan_view_load(struct orphan_view *v);
void orphan_view_free(struct orphan_view *v);

/* The record of f (sg_orphan_record). */
const struct sg_creator_rec *orphan_view_record(const struct orphan_view *v, const struct sg_shm_file *f);

/* ls's CREATOR of f from its record: "PID (STATE)" into buf, or NULL
 * when f has none. */
const char *orphan_view_creator(const struct orphan_view *v, const struct sg_shm_listing *l,
				const struct sg_shm_file *f, char *buf, size_t len);

/* ls: a line for each file with a record, after the table. */
void orphan_view_print(const struct orphan_view *v, const struct sg_shm_listing *l);
/* ls --json: the record and the verdict of f, or null. */
json_t *orphan_view_json(const struct orphan_view *v, const struct sg_shm_listing *l, const struct sg_shm_file *f);

/* sweep --dead: what stays unprovable for want of any record (untagged
 * files without one), with the bytes and what would be needed, on out. */
void orphan_view_untagged(const struct orphan_view *v, const struct sg_shm_listing *l, FILE *out);

#endif

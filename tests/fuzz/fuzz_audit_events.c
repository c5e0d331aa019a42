/* libFuzzer target: the tracer's one decoder of ring-buffer events
 * (audit_trace_decode), and the auditor's table fed what it decodes.
 * Input: events, each a 2-byte little-endian length and that many bytes,
 * given to the decoder in buffers of exactly that size. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "audit_engine.h"
#include "audit_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct audit_opts o;
	struct audit a = {.o = &o, .abort_set.aborts_tail = &a.abort_set.aborts, .run.cmd_status = -1};
	struct audit_event e;

	a.files = audit_files_new(64);
	a.attribution = (struct audit_attribution){.patterns = &o.patterns, .files = a.files};
	while (size >= 2) {
		size_t len = (size_t)(data[0] | data[1] << 8);
		data += 2;
		size -= 2;
		if (len > size)
			len = size;
		uint8_t *event = malloc(len ? len : 1);
		memcpy(event, data, len);
		if (audit_trace_decode(event, len, &e))
			audit_on_event(&a, &e);
		free(event);
		data += len;
		size -= len;
	}
	audit_files_free(a.files);
	audit_workloads_free(&a.workloads);
	audit_tags_free(&a);
	audit_early_free(&a.pending.early);
	return 0;
}

/* libFuzzer target: the tag read back from a file's user.shmguard xattr,
 * and marker names (request IDs). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reqid.h"
#include "tag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sg_tag tag, again;
	char value[SG_TAG_MAX], name[SG_NAME_MAX + 2];
	int n;

	if (sg_tag_decode(&tag, (const char *)data, size) == 0) {
		/* Whatever decodes encodes back to a value that decodes the same. */
		n = sg_tag_encode(&tag, value, sizeof(value));
		if (n < 0 || sg_tag_decode(&again, value, (size_t)n) < 0 || again.pid != tag.pid ||
		    again.start_ticks != tag.start_ticks || again.pidns != tag.pidns || again.created_ns != tag.created_ns ||
		    strcmp(again.req, tag.req) != 0 || sg_reqid_invalid(tag.req))
			abort();
	}
	/* As a marker name: valid means a usable file name. */
	if (size < sizeof(name) && !memchr(data, '\0', size)) {
		memcpy(name, data, size);
		name[size] = '\0';
		if (!sg_reqid_invalid(name) &&
		    (!size || size > SG_NAME_MAX || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")))
			abort();
	}
	return 0;
}

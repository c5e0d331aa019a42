/* libFuzzer target: name patterns, parsed and matched.  Input: a pattern
 * list, a newline, a name. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sg_pattern_set set;
	char spec[1024], req[SG_NAME_MAX + 1], other[SG_NAME_MAX + 1], err[256];
	const uint8_t *nl = memchr(data, '\n', size);
	size_t slen = nl ? (size_t)(nl - data) : size;
	struct sg_match_at at;

	if (slen >= sizeof(spec) || memchr(data, '\0', slen))
		return 0;
	memcpy(spec, data, slen);
	spec[slen] = '\0';
	if (sg_patterns_parse(&set, spec, err, sizeof(err)) < 0)
		return 0;
	const char *name = nl ? (const char *)nl + 1 : "";
	size_t nlen = nl ? size - slen - 1 : 0;
	enum sg_match_result r = sg_patterns_match(&set, name, nlen, req, other, &at);

	/* The direct scan answers as the position sets do. */
	static struct sg_pattern_set general;
	char greq[SG_NAME_MAX + 1], gother[SG_NAME_MAX + 1];
	struct sg_match_at gat;
	general = set;
	for (unsigned k = 0; k < general.count; k++)
		general.patterns[k].direct = false;
	if (sg_patterns_match(&general, name, nlen, greq, gother, &gat) != r || gat.shape != at.shape ||
	    (r != SG_MATCH_NONE && strcmp(greq, req) != 0) || (r == SG_MATCH_AMBIGUOUS && strcmp(gother, other) != 0))
		abort();
	/* So does the entry for names without NUL or '/'. */
	char creq[SG_NAME_MAX + 1], cother[SG_NAME_MAX + 1];
	struct sg_match_at cat;
	if (!memchr(name, '\0', nlen) && !memchr(name, '/', nlen) &&
	    (sg_patterns_match_component(&set, name, nlen, creq, cother, &cat) != r || cat.shape != at.shape ||
	     (r != SG_MATCH_NONE && strcmp(creq, req) != 0) || (r == SG_MATCH_AMBIGUOUS && strcmp(cother, other) != 0) ||
	     (r == SG_MATCH_ONE && (cat.req_at != at.req_at || cat.req_len != at.req_len))))
		abort();
	switch (r) {
	case SG_MATCH_ONE:
		/* The request is a non-empty part of the name, without '/'. */
		if (!*req || strchr(req, '/') || at.req_len != strlen(req) || at.req_len > nlen ||
		    at.req_at > nlen - at.req_len || memcmp(name + at.req_at, req, at.req_len) != 0 ||
		    gat.req_at != at.req_at || at.shape < 0 || (unsigned)at.shape >= set.count)
			abort();
		break;
	case SG_MATCH_AMBIGUOUS:
		if (strcmp(req, other) == 0 || at.shape != -1)
			abort();
		break;
	case SG_MATCH_NONE:
		if (at.shape != -1)
			abort();
		break;
	}
	return 0;
}

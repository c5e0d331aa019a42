#include "abort_match.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Backtracking steps one line may cost: a pathological regex on a long line
 * gives up instead of stalling the follower. */
#define MATCH_LIMIT 10000000

/* Each preset matches the whole evidence of an abort, never a bare ID, and
 * is anchored where the log's own fields are, so text a client controls
 * (a path, a header) cannot pass for it.  README.md shows the log formats
 * the nginx and envoy presets expect. */
static const struct {
	const char *name, *regex;
} presets[] = {
	/* vLLM v1 with --enable-log-requests (logger vllm.v1.engine.async_llm):
	 * "Aborted request(s) a,b." (IDs joined by ","; each following ID is
	 * matched where the last one ended, \G) and "Request a aborted.". */
	{"vllm", "(?|Aborted request\\(s\\) (?<req>[^,\\s]+?)(?=,|\\.?$)"
		 "|(?!^)\\G,\\s*(?<req>[^,\\s]+?)(?=,|\\.?$)"
		 "|\\bRequest (?<req>\\S+) aborted\\.$)"},
	/* SGLang: "Request is disconnected from the client side (type 1).
	 * Abort request obj.rid='a'" (a Python repr: a list for a batch). */
	{"sglang", "(?|disconnected from the client side \\(type \\d+\\)\\. Abort request obj\\.rid=\\[?'(?<req>[^'\\\\]+)'"
		   "|(?!^)\\G, '(?<req>[^'\\\\]+)')"},
	/* nginx, log_format shmguard: "... $status $body_bytes_sent
	 * complete=$request_completion rid=$request_id": 499 (the client left
	 * before the response began), or any status with the response not
	 * completed (it left mid-stream: the status already sent stays). */
	{"nginx", " (?:499 \\d+ complete=\\S*|\\d{3} \\d+ complete=) rid=(?!-$)(?<req>[^\\s\"]+)$"},
	/* Envoy, format "... %RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_SENT%
	 * %DURATION% rid=%REQ(X-REQUEST-ID)%": the DC flag (downstream
	 * connection termination), alone or among others. */
	{"envoy", " \\d+ (?:[A-Z]+,)*DC(?:,[A-Z]+)* \\d+ \\d+ rid=(?!-$)(?<req>[^\\s\"]+)$"},
};

struct abort_match {
	pcre2_code *code;
	pcre2_match_data *md;
	pcre2_match_context *mctx;
	uint32_t group;
	const char *before, *after; /* the template around {id} */
	size_t before_len, after_len;
	char *out;
	size_t out_cap;
};

const char *abort_match_preset(const char *name)
{
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		if (strcmp(presets[i].name, name) == 0)
			return presets[i].regex;
	return NULL;
}

static int set_template(struct abort_match *m, const char *tmpl, char *err, size_t errlen)
{
	const char *at = tmpl ? strstr(tmpl, "{id}") : NULL;

	if (!tmpl) {
		m->before = m->after = "";
		return 0;
	}
	if (!at || strstr(at + 4, "{id}")) {
		snprintf(err, errlen, "the ID template must hold {id} exactly once");
		return -1;
	}
	m->before = tmpl;
	m->before_len = (size_t)(at - tmpl);
	m->after = at + 4;
	m->after_len = strlen(m->after);
	return 0;
}

struct abort_match *abort_match_new(const char *regex, const char *preset, const char *tmpl, char *err,
				    size_t errlen)
{
	struct abort_match *m = calloc(1, sizeof(*m));
	uint32_t groups = 0;
	PCRE2_SIZE where;
	int code, named;

	if (!m) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (!regex && !(regex = abort_match_preset(preset))) {
		snprintf(err, errlen, "unknown preset '%s' (vllm, sglang, nginx, envoy)", preset);
		goto fail;
	}
	if (set_template(m, tmpl, err, errlen) < 0)
		goto fail;
	m->code = pcre2_compile((PCRE2_SPTR)regex, PCRE2_ZERO_TERMINATED, 0, &code, &where, NULL);
	if (!m->code) {
		char why[160];

		pcre2_get_error_message(code, (PCRE2_UCHAR *)why, sizeof(why));
		snprintf(err, errlen, "bad regex at offset %zu: %s", (size_t)where, why);
		goto fail;
	}
	named = pcre2_substring_number_from_name(m->code, (PCRE2_SPTR) "req");
	pcre2_pattern_info(m->code, PCRE2_INFO_CAPTURECOUNT, &groups);
	if (named > 0)
		m->group = (uint32_t)named;
	else if (named == PCRE2_ERROR_NOUNIQUESUBSTRING) {
		snprintf(err, errlen, "the regex names several groups 'req' with different numbers");
		goto fail;
	} else if (groups > 0)
		m->group = 1;
	else {
		snprintf(err, errlen, "the regex needs a group for the ID: (?<req>...) or (...)");
		goto fail;
	}
	m->md = pcre2_match_data_create_from_pattern(m->code, NULL);
	m->mctx = pcre2_match_context_create(NULL);
	if (!m->md || !m->mctx) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	pcre2_set_match_limit(m->mctx, MATCH_LIMIT);
	return m;
fail:
	abort_match_free(m);
	return NULL;
}

void abort_match_free(struct abort_match *m)
{
	if (!m)
		return;
	pcre2_match_context_free(m->mctx);
	pcre2_match_data_free(m->md);
	pcre2_code_free(m->code);
	free(m->out);
	free(m);
}

/* The template around id into m->out; NULL without memory. */
static const char *apply(struct abort_match *m, const char *id, size_t len, size_t *out_len)
{
	size_t need = m->before_len + len + m->after_len + 1;

	if (need > m->out_cap) {
		char *p = realloc(m->out, need);

		if (!p)
			return NULL;
		m->out = p;
		m->out_cap = need;
	}
	memcpy(m->out, m->before, m->before_len);
	memcpy(m->out + m->before_len, id, len);
	memcpy(m->out + m->before_len + len, m->after, m->after_len);
	*out_len = need - 1;
	m->out[*out_len] = '\0';
	return m->out;
}

int abort_match_line(struct abort_match *m, const char *line, size_t len,
		     void (*found)(const char *id, size_t len, void *ctx), void *ctx)
{
	PCRE2_SIZE start = 0;
	int n = 0;

	while (start <= len) {
		int rc = pcre2_match(m->code, (PCRE2_SPTR)line, len, start, 0, m->md, m->mctx);
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m->md);
		const char *id;
		size_t id_len;

		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc < 0)
			return -1;
		/* The group takes part in this match (an alternative may not). */
		if ((uint32_t)rc > m->group && ov[2 * m->group] != PCRE2_UNSET) {
			id_len = ov[2 * m->group + 1] - ov[2 * m->group];
			/* An empty logged ID stays empty, whatever the template. */
			id = id_len ? apply(m, line + ov[2 * m->group], id_len, &id_len) : "";
			if (!id)
				return -1;
			found(id, id_len, ctx);
			n++;
		}
		/* On from the match's end; past an empty match by one byte. */
		start = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
	}
	return n;
}

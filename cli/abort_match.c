#include "abort_match.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Backtracking steps one line may cost: a pathological regex on a long line
 * gives up instead of stalling the follower. */
#define MATCH_LIMIT 10000000

/* An optional SGR colour sequence around a field of a coloured log. */
#define SGR "(?:\\e\\[[0-9;]*m)?"

/* vLLM's logger, "%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d] ":
 * "INFO 12-01 02:11:22 [async_llm.py:456] " (older releases: no "[";
 * VLLM_LOGGING_LEVEL=DEBUG: "v1/engine/async_llm.py"), after the prefix
 * of the API server's process when it runs several: "(APIServer pid=7) "
 * (newer: "(API) ", "(API (0)) "), and in colour when asked
 * (VLLM_LOGGING_COLOR).  Only async_llm.py logs aborts. */
#define VLLM_PREFIX                                                                                                \
	"^(?:" SGR "\\((?:APIServer(?:_\\d+)?(?: pid=\\d+)?|API(?: \\(\\d+\\))?)\\)" SGR " )?" SGR "INFO" SGR " " SGR \
	"\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d" SGR " " SGR "\\[?(?:v1/engine/)?async_llm\\.py:\\d+\\]" SGR " "

/* SGLang's logger, "[%(asctime)s%(prefix)s] " (no level; a rank such as
 * " TP0" only in the scheduler's processes, which log no aborts). */
#define SGLANG_PREFIX "^\\[\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\] "
#define SGLANG_ABORT                                                                                               \
	SGLANG_PREFIX "\\[http_server\\] (?:Error|Client disconnected): Request is disconnected from the client side " \
		      "\\(type \\d+\\)\\. Abort request obj\\.rid="

/* Each preset matches the whole evidence of an abort, never a bare ID: the
 * server's own logger prefix at the start of the line, its message after
 * it, and the ID at a fixed place in the message, up to the line's end, so
 * that text a client controls (a prompt logged by --enable-log-requests, a
 * path, a header) cannot pass for it.  Where the IDs of a list cannot be
 * told apart from one ID holding the separator (vLLM joins them with ",",
 * and clients choose IDs), the line is matched as `ambiguous`: reported,
 * never marked.  docs/usage.md shows the log formats the nginx and envoy
 * presets expect. */
static const struct {
	const char *name, *regex;
	bool crlf_joins; /* the server writes a record's inner newlines as "\r\n" */
} presets[] = {
	/* vLLM v1 with --enable-log-requests (vllm/v1/engine/async_llm.py):
	 * "Aborted request(s) a." (a list: "a,b.") and "Request a aborted.".
	 * Its formatter writes a message's newlines as "\r\n" and the prefix
	 * again, so an ID holding one could start a line of its own with the
	 * right prefix: the lines of a record are matched joined, the ID
	 * then holding the "\r\n" (which the caller refuses). */
	{"vllm",
	 VLLM_PREFIX "(?:(?|Aborted request\\(s\\) (?<req>[^,]+)|Request (?<req>.+) aborted)"
		     "|Aborted request\\(s\\) (?<ambiguous>.*,.*))\\.$",
	 true},
	/* SGLang: "[http_server] Error: Request is disconnected from the client
	 * side (type 1). Abort request obj.rid='a'" (newer: "[http_server]
	 * Client disconnected: ..."); the ID a Python repr, a list for a batch:
	 * ['a', 'b'], its items checked whole first. */
	{"sglang",
	 "(?|" SGLANG_ABORT "'(?<req>[^'\\\\]+)'$"
	 "|" SGLANG_ABORT "\\['(?<req>[^'\\\\]+)'(?=(?:, '[^'\\\\]+')*\\]$)"
	 "|(?!^)\\G, '(?<req>[^'\\\\]+)'(?=(?:, '[^'\\\\]+')*\\]$))",
	 false},
	/* nginx, log_format shmguard: "... $status $body_bytes_sent
	 * complete=$request_completion rid=$request_id": 499 (the client left
	 * before the response began), or any status with the response not
	 * completed (it left mid-stream: the status already sent stays). */
	{"nginx", " (?:499 \\d+ complete=\\S*|\\d{3} \\d+ complete=) rid=(?!-$)(?<req>[^\\s\"]+)$", false},
	/* Envoy, format "... %RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_SENT%
	 * %DURATION% rid=%REQ(X-REQUEST-ID)%": the DC flag (downstream
	 * connection termination), alone or among others. */
	{"envoy", " \\d+ (?:[A-Z]+,)*DC(?:,[A-Z]+)* \\d+ \\d+ rid=(?!-$)(?<req>[^\\s\"]+)$", false},
};

struct abort_match {
	pcre2_code *code;
	pcre2_match_data *md;
	pcre2_match_context *mctx;
	uint32_t group, ambiguous; /* ambiguous: 0 if the regex has no such group */
	bool crlf_joins;
	const char *before, *after; /* the template around {id} */
	size_t before_len, after_len;
	char *out;
	size_t out_cap;
};

static int preset_index(const char *name)
{
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		if (strcmp(presets[i].name, name) == 0)
			return (int)i;
	return -1;
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
	uint32_t options = 0;
	int code, named;

	if (!m) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (!regex) {
		int i = preset_index(preset);

		if (i < 0) {
			snprintf(err, errlen, "unknown preset '%s' (vllm, sglang, nginx, envoy)", preset);
			goto fail;
		}
		regex = presets[i].regex;
		m->crlf_joins = presets[i].crlf_joins;
		/* A record of several lines is one subject: '.' crosses its
		 * newlines and '$' is its end alone. */
		options = PCRE2_DOTALL | PCRE2_DOLLAR_ENDONLY;
	}
	if (set_template(m, tmpl, err, errlen) < 0)
		goto fail;
	m->code = pcre2_compile((PCRE2_SPTR)regex, PCRE2_ZERO_TERMINATED, options, &code, &where, NULL);
	if (!m->code) {
		char why[160];

		pcre2_get_error_message(code, (PCRE2_UCHAR *)why, sizeof(why));
		snprintf(err, errlen, "bad regex at offset %zu: %s", (size_t)where, why);
		goto fail;
	}
	named = pcre2_substring_number_from_name(m->code, (PCRE2_SPTR) "ambiguous");
	m->ambiguous = named > 0 ? (uint32_t)named : 0;
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

bool abort_match_joins_crlf(const struct abort_match *m)
{
	return m->crlf_joins;
}

int abort_match_line(struct abort_match *m, const char *line, size_t len,
		     void (*found)(const char *id, size_t len, bool ambiguous, void *ctx), void *ctx)
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
		/* Evidence of an abort whose IDs cannot be told apart. */
		if (m->ambiguous && (uint32_t)rc > m->ambiguous && ov[2 * m->ambiguous] != PCRE2_UNSET) {
			found(line + ov[2 * m->ambiguous], ov[2 * m->ambiguous + 1] - ov[2 * m->ambiguous], true, ctx);
			n++;
		}
		/* The group takes part in this match (an alternative may not). */
		else if ((uint32_t)rc > m->group && ov[2 * m->group] != PCRE2_UNSET) {
			id_len = ov[2 * m->group + 1] - ov[2 * m->group];
			/* An empty logged ID stays empty, whatever the template. */
			id = id_len ? apply(m, line + ov[2 * m->group], id_len, &id_len) : "";
			if (!id)
				return -1;
			found(id, id_len, false, ctx);
			n++;
		}
		/* On from the match's end; past an empty match by one byte. */
		start = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
	}
	return n;
}

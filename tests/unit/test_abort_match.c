/* The log patterns of `shmguard abort --follow`: each preset on sample lines
 * of the server or proxy it is for, and the regex and template rules. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "abort_match.h"
#include "cri_log.h"
#include "log_record.h"

static char err[256];

static void collect(const char *id, size_t len, bool ambiguous, void *ctx)
{
	char *out = ctx;

	if (ambiguous) {
		strcat(out, "?");
		strncat(out, id, len);
	} else {
		cr_assert_eq(strlen(id), len);
		strcat(out, id);
	}
	strcat(out, "|");
}

/* The IDs line yields, each followed by '|' (an ambiguous match: "?" and
 * the text). */
static const char *ids(struct abort_match *m, const char *line)
{
	static char out[1024];

	out[0] = '\0';
	cr_assert_geq(abort_match_line(m, line, strlen(line), collect, out), 0, "%s", line);
	return out;
}

/* head and tail joined, living until the next call. */
static const char *joined(const char *head, const char *tail)
{
	static char line[512];

	snprintf(line, sizeof(line), "%s%s", head, tail);
	return line;
}

static struct abort_match *preset(const char *name, const char *tmpl)
{
	struct abort_match *m = abort_match_new(NULL, name, tmpl, err, sizeof(err));

	cr_assert(m, "%s: %s", name, err);
	return m;
}

Test(abort_match, vllm)
{
	struct abort_match *m = preset("vllm", NULL);

	cr_expect_str_eq(ids(m, "INFO 12-01 02:11:22 [async_llm.py:456] Aborted request(s) chatcmpl-9f2c1e."),
			 "chatcmpl-9f2c1e|");
	cr_expect_str_eq(ids(m, "INFO 12-01 02:11:22 [async_llm.py:612] Request chatcmpl-abc aborted."),
			 "chatcmpl-abc|");
	/* Older releases (no "["), DEBUG level (the file's path), the process
	 * prefix of the API server, and colour. */
	cr_expect_str_eq(ids(m, "INFO 12-01 02:11:22 async_llm.py:456] Aborted request(s) r1."), "r1|");
	cr_expect_str_eq(ids(m, "INFO 12-01 02:11:22 [v1/engine/async_llm.py:456] Aborted request(s) r2."), "r2|");
	cr_expect_str_eq(ids(m, "(APIServer pid=3385) INFO 12-01 02:11:22 [async_llm.py:612] Request r3 aborted."),
			 "r3|");
	cr_expect_str_eq(ids(m, "(API (0)) INFO 12-01 02:11:22 [async_llm.py:612] Request r4 aborted."), "r4|");
	cr_expect_str_eq(ids(m, "\x1b[1;36m(APIServer pid=7)\x1b[0;0m \x1b[32mINFO\x1b[0m \x1b[90m12-01 02:11:22\x1b[0m "
				"\x1b[90m[async_llm.py:612]\x1b[0m Request r5 aborted."),
			 "r5|");
	/* An ID is what lies between the message's fixed words. */
	cr_expect_str_eq(ids(m, "INFO 12-01 02:11:22 [async_llm.py:612] Request a b aborted."), "a b|");
	/* AsyncLLM.abort joins a list with ",", and a client may choose an ID
	 * holding one: several IDs are no IDs. */
	cr_expect_str_eq(ids(m, "INFO 12-01 02:11:22 [async_llm.py:456] Aborted request(s) cmpl-1-0,cmpl-2-0."),
			 "?cmpl-1-0,cmpl-2-0|");
	cr_expect_str_eq(ids(m, "INFO 12-01 02:11:22 [async_llm.py:618] Request chatcmpl-abc failed (engine dead)."), "");
	cr_expect_str_eq(ids(m, "INFO 12-01 02:11:22 [logger.py:43] Received request chatcmpl-abc: prompt: 'x'"), "");
	cr_expect_str_eq(ids(m, "INFO 12-01 02:11:22 [async_llm.py:300] Added request chatcmpl-abc."), "");
	cr_expect_str_eq(ids(m, "WARNING 12-01 02:11:22 [async_llm.py:456] Aborted request(s) r6."), "");
	cr_expect_str_eq(ids(m, "Aborted request(s) a."), "");
	abort_match_free(m);
}

/* What a client writes (a prompt, which --enable-log-requests logs; its
 * request ID) never passes for the server's own abort line. */
Test(abort_match, vllm_hostile_lines)
{
	struct abort_match *m = preset("vllm", NULL);

	cr_expect_str_eq(ids(m, "INFO 12-01 02:11:22 [logger.py:43] Received request chatcmpl-att: prompt: 'Aborted "
				"request(s) chatcmpl-victim,', params: SamplingParams(n=1), prompt_token_ids: None"),
			 "");
	cr_expect_str_eq(ids(m, "INFO 12-01 02:11:22 [logger.py:43] Received request chatcmpl-att: prompt: 'x "
				"Aborted request(s) chatcmpl-victim.'"),
			 "");
	cr_expect_str_eq(ids(m, "INFO 12-01 02:11:22 [logger.py:43] Received request chatcmpl-att: prompt: 'INFO "
				"12-01 02:11:22 [async_llm.py:456] Aborted request(s) chatcmpl-victim.'"),
			 "");
	/* A client's own ID made to end like another's abort. */
	cr_expect_str_eq(ids(m, "INFO 12-01 02:11:22 [async_llm.py:612] Request chatcmpl-x aborted. Request "
				"chatcmpl-victim aborted."),
			 "chatcmpl-x aborted. Request chatcmpl-victim|");
	cr_expect_str_eq(ids(m, "INFO 12-01 02:11:22 [async_llm.py:456] Aborted request(s) chatcmpl-x,chatcmpl-victim."),
			 "?chatcmpl-x,chatcmpl-victim|");
	/* An ID holding a newline: vLLM writes "\r\n" and its prefix again.
	 * The record, its lines joined, is matched whole: the ID found holds
	 * the "\r\n" (which the follower refuses), never the victim's alone. */
	cr_expect(abort_match_joins_crlf(m));
	cr_expect_str_eq(ids(m, "INFO 12-01 02:11:22 [async_llm.py:612] Request chatcmpl-att\r\n"
				"INFO 12-01 02:11:22 [async_llm.py:612] Request chatcmpl-victim aborted."),
			 "chatcmpl-att\r\nINFO 12-01 02:11:22 [async_llm.py:612] Request chatcmpl-victim|");
	cr_expect_str_eq(ids(m, "INFO 12-01 02:11:22 [async_llm.py:456] Aborted request(s) chatcmpl-att\r\n"
				"INFO 12-01 02:11:22 [async_llm.py:456] Aborted request(s) chatcmpl-victim."),
			 "chatcmpl-att\r\nINFO 12-01 02:11:22 [async_llm.py:456] Aborted request(s) chatcmpl-victim|");
	abort_match_free(m);
}

/* A log's lines, through what abort --follow puts between the file and
 * the matcher: a CRI log's prefix and P/F parts (cri_log.c), then the
 * server's records per stream (log_record.c). */
struct chain {
	struct abort_match *m;
	struct cri_log cri;
	struct log_records records;
	char out[1024];
};

static void chain_record(const char *rec, size_t len, void *ctx)
{
	struct chain *c = ctx;

	cr_assert_geq(abort_match_line(c->m, rec, len, collect, c->out), 0);
}

static void chain_cri_line(const char *line, size_t len, enum log_stream st, void *ctx)
{
	struct chain *c = ctx;

	cr_assert_eq(log_records_line(&c->records, st, line, len, chain_record, c), 0);
}

/* The IDs the file's lines yield (CRI: cri; else a plain log), each line
 * given without its "\n". */
static const char *chain_ids(struct abort_match *m, bool cri, const char *const *lines, size_t n)
{
	static struct chain c;

	c = (struct chain){.m = m};
	cri_log_init(&c.cri, 4096);
	log_records_init(&c.records, 4096, abort_match_joins_crlf(m));
	for (size_t i = 0; i < n; i++)
		if (cri)
			cr_assert_eq(cri_log_line(&c.cri, lines[i], strlen(lines[i]), chain_cri_line, &c), 0);
		else
			cr_assert_eq(log_records_line(&c.records, LOG_STDOUT, lines[i], strlen(lines[i]), chain_record, &c),
				     0);
	cri_log_free(&c.cri);
	log_records_free(&c.records);
	return c.out;
}

#define CHAIN(m, cri, ...)                                                                                         \
	chain_ids(m, cri, (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))

#define V "INFO 12-01 02:11:22 [async_llm.py:612] "
#define TS "2026-12-01T20:00:00.123456789"

/* A client's request ID "chatcmpl-att\nRequest chatcmpl-victim": vLLM
 * writes "V Request chatcmpl-att\r\nV Request chatcmpl-victim aborted.\n".
 * However the log lays that out, the victim's ID is never found alone. */
Test(abort_match, a_vllm_record_of_two_lines_is_matched_whole_in_every_layout)
{
	struct abort_match *m = preset("vllm", NULL);
	const char *joined = "chatcmpl-att\r\n" V "Request chatcmpl-victim|";

	/* A plain log (the server's output in a file). */
	cr_expect_str_eq(CHAIN(m, false, V "Request chatcmpl-att\r", V "Request chatcmpl-victim aborted."), joined);
	/* conmon (podman, CRI-O) keeps the "\r" and writes stderr's lines
	 * between stdout's. */
	cr_expect_str_eq(CHAIN(m, true, TS "+00:00 stdout F " V "Request chatcmpl-att\r", TS "+00:00 stderr F noise",
			       TS "+00:00 stdout F " V "Request chatcmpl-victim aborted."),
			 joined);
	/* conmon, its read ending between the "\r" and the "\n": a P part,
	 * then an F part holding nothing, stderr between them. */
	cr_expect_str_eq(CHAIN(m, true, TS "+00:00 stdout P " V "Request chatcmpl-att\r", TS "+00:00 stderr F noise",
			       TS "+00:00 stdout F ", TS "+00:00 stderr F noise",
			       TS "+00:00 stdout F " V "Request chatcmpl-victim aborted."),
			 joined);
	/* A stderr line ending in "\r" holds up stderr alone. */
	cr_expect_str_eq(CHAIN(m, true, TS "Z stderr F progress 10%\r", TS "Z stdout F " V "Request chatcmpl-ok aborted.",
			       TS "Z stderr F " V "Request chatcmpl-victim aborted."),
			 "chatcmpl-ok|");
	abort_match_free(m);
}

/* Records split by the runtime into parts are matched once joined, per
 * stream: containerd cuts a line at its maximum size (P parts, "\r\n"
 * taken off the last), stderr's parts between. */
Test(abort_match, records_split_by_the_runtime_are_joined_per_stream)
{
	struct abort_match *m = preset("vllm", NULL);

	cr_expect_str_eq(CHAIN(m, true, TS "Z stdout P " V "Request chatcmpl-", TS "Z stderr P " V "Request chatcmpl-e",
			       TS "Z stdout P long", TS "Z stderr F rr aborted.", TS "Z stdout F id aborted.",
			       TS "Z stdout F " V "Request chatcmpl-next aborted."),
			 "chatcmpl-err|chatcmpl-longid|chatcmpl-next|");
	/* A part alone is never a record. */
	cr_expect_str_eq(CHAIN(m, true, TS "Z stdout P " V "Request chatcmpl-part aborted."), "");
	abort_match_free(m);
	/* Presets whose servers write no "\r\n" in a record: each line is a
	 * record, a "\r" at its end taken off. */
	m = preset("nginx", NULL);
	cr_expect(!abort_match_joins_crlf(m));
	cr_expect_str_eq(CHAIN(m, false, "1.2.3.4 - - [x] \"GET / HTTP/1.1\" 499 0 complete= rid=r1\r",
			       "1.2.3.4 - - [x] \"GET / HTTP/1.1\" 499 0 complete= rid=r2"),
			 "r1|r2|");
	abort_match_free(m);
}

Test(abort_match, sglang)
{
	struct abort_match *m = preset("sglang", NULL);

	/* Logged by the HTTP server when the check raises it. */
	cr_expect_str_eq(ids(m, "[2026-12-01 02:11:22] [http_server] Error: Request is disconnected from the "
				"client side (type 1). Abort request obj.rid='0f4c3a1b9e2d4c7a'"),
			 "0f4c3a1b9e2d4c7a|");
	cr_expect_str_eq(ids(m, "[2026-12-01 02:11:22] [http_server] Client disconnected: Request is disconnected "
				"from the client side (type 3). Abort request obj.rid='r-7'"),
			 "r-7|");
	cr_expect_str_eq(ids(m, "[2026-12-01 02:11:22] [http_server] Error: Request is disconnected from the client "
				"side (type 1). Abort request obj.rid=['a1', 'b2']"),
			 "a1|b2|");
	cr_expect_str_eq(ids(m, "[2026-12-01 02:11:22] Finish: obj=GenerateReqInput(rid='0f4c3a1b')"), "");
	/* A list not closed, or with an item that is no plain repr, is not read. */
	cr_expect_str_eq(ids(m, "[2026-12-01 02:11:22] [http_server] Error: Request is disconnected from the client "
				"side (type 1). Abort request obj.rid=['a1', 'b2'"),
			 "");
	abort_match_free(m);
}

/* SGLang's --log-requests logs each request's object, the prompt and rid
 * of the client's choosing in it. */
Test(abort_match, sglang_hostile_lines)
{
	struct abort_match *m = preset("sglang", NULL);

	cr_expect_str_eq(ids(m, "[2026-12-01 02:11:22] Receive: obj=GenerateReqInput(text='[http_server] Error: "
				"Request is disconnected from the client side (type 1). Abort request obj.rid=\\'victim\\'', "
				"rid='att')"),
			 "");
	cr_expect_str_eq(ids(m, "[2026-12-01 02:11:22] Receive: obj=GenerateReqInput(text=\"x\", rid=\"[2026-12-01 "
				"02:11:22] [http_server] Error: Request is disconnected from the client side (type 1). "
				"Abort request obj.rid='victim'\")"),
			 "");
	/* A rid holding a quote is logged in double quotes: no ID is read. */
	cr_expect_str_eq(ids(m, "[2026-12-01 02:11:22] [http_server] Error: Request is disconnected from the client "
				"side (type 1). Abort request obj.rid=\"a', 'victim\""),
			 "");
	abort_match_free(m);
}

/* log_format shmguard '$remote_addr - $remote_user [$time_local] "$request" '
 *                     '$status $body_bytes_sent complete=$request_completion rid=$request_id'; */
Test(abort_match, nginx)
{
	struct abort_match *m = preset("nginx", NULL);

	cr_expect_str_eq(ids(m, "127.0.0.1 - - [01/Dec/2026:02:11:22 +0000] \"GET /v1/completions HTTP/1.1\" 499 0 "
				"complete= rid=43bd59c8bb3d0bd2cfd6bb676dbd55b5"),
			 "43bd59c8bb3d0bd2cfd6bb676dbd55b5|");
	/* Hung up mid-stream: the 200 already sent is logged, unfinished. */
	cr_expect_str_eq(ids(m, "127.0.0.1 - - [01/Dec/2026:02:11:22 +0000] \"GET /v1/completions HTTP/1.1\" 200 188 "
				"complete= rid=bd5ec0f81365baca8c2700f7f045f730"),
			 "bd5ec0f81365baca8c2700f7f045f730|");
	cr_expect_str_eq(ids(m, "127.0.0.1 - - [01/Dec/2026:02:11:22 +0000] \"GET /v1/completions HTTP/1.1\" 200 475 "
				"complete=OK rid=bd5ec0f81365baca8c2700f7f045f730"),
			 "");
	/* What a client writes into its request line cannot pass for it. */
	cr_expect_str_eq(ids(m, "127.0.0.1 - - [01/Dec/2026:02:11:22 +0000] \"GET /x 200 1 complete= rid=victim "
				"HTTP/1.1\" 200 475 complete=OK rid=bd5ec0f81365baca8c2700f7f045f730"),
			 "");
	cr_expect_str_eq(ids(m, "127.0.0.1 - - [01/Dec/2026:02:11:22 +0000] \"GET / HTTP/1.1\" 499 0 complete= rid=-"), "");
	abort_match_free(m);
}

/* format: '[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" %RESPONSE_CODE%
 *          %RESPONSE_FLAGS% %BYTES_SENT% %DURATION% rid=%REQ(X-REQUEST-ID)%' */
Test(abort_match, envoy)
{
	struct abort_match *m = preset("envoy", NULL);
	const char *head = "[2026-12-01T02:11:22.310Z] \"POST /v1/chat/completions HTTP/1.1\"";

	cr_expect_str_eq(ids(m, joined(head, " 200 DC 1834 2210 rid=cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2")),
			 "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2|");
	cr_expect_str_eq(ids(m, joined(head, " 0 DC 0 12 rid=r1")), "r1|");
	cr_expect_str_eq(ids(m, joined(head, " 200 UT,DC 0 12 rid=r2")), "r2|");
	cr_expect_str_eq(ids(m, joined(head, " 200 - 1834 2210 rid=r3")), "");
	cr_expect_str_eq(ids(m, joined(head, " 503 UC 0 1 rid=r4")), "");
	cr_expect_str_eq(ids(m, joined(head, " 200 DC 0 1 rid=-")), "");
	abort_match_free(m);
}

Test(abort_match, template_and_first_group)
{
	struct abort_match *m = abort_match_new("stopped (\\w+)", NULL, "chatcmpl-{id}-0", err, sizeof(err));

	cr_assert(m, "%s", err);
	cr_expect_str_eq(ids(m, "stopped ab stopped cd"), "chatcmpl-ab-0|chatcmpl-cd-0|");
	abort_match_free(m);
	/* The named group wins over the first one. */
	m = abort_match_new("(x)=(?<req>\\d+)", NULL, NULL, err, sizeof(err));
	cr_assert(m, "%s", err);
	cr_expect_str_eq(ids(m, "x=1 x=22"), "1|22|");
	abort_match_free(m);
	/* An empty logged ID stays empty: the caller refuses it. */
	m = abort_match_new("id=(\\w*);", NULL, "chatcmpl-{id}", err, sizeof(err));
	cr_assert(m, "%s", err);
	cr_expect_str_eq(ids(m, "id=;"), "|");
	abort_match_free(m);
}

Test(abort_match, refuses_bad_options)
{
	cr_expect_null(abort_match_new("no group", NULL, NULL, err, sizeof(err)));
	cr_expect(strstr(err, "needs a group"), "%s", err);
	cr_expect_null(abort_match_new("(unclosed", NULL, NULL, err, sizeof(err)));
	cr_expect(strstr(err, "bad regex"), "%s", err);
	cr_expect_null(abort_match_new(NULL, "apache", NULL, err, sizeof(err)));
	cr_expect(strstr(err, "unknown preset"), "%s", err);
	cr_expect_null(abort_match_new("(x)", NULL, "no-placeholder", err, sizeof(err)));
	cr_expect_null(abort_match_new("(x)", NULL, "{id}{id}", err, sizeof(err)));
}

/* Catastrophic backtracking on a long line gives up instead of hanging. */
Test(abort_match, gives_up_on_runaway_backtracking, .timeout = 20)
{
	struct abort_match *m = abort_match_new("^(a+)+$", NULL, NULL, err, sizeof(err));
	char line[4096];

	cr_assert(m, "%s", err);
	memset(line, 'a', sizeof(line) - 2);
	line[sizeof(line) - 2] = 'b';
	line[sizeof(line) - 1] = '\0';
	cr_expect_eq(abort_match_line(m, line, strlen(line), collect, (char[1024]){0}), -1);
	abort_match_free(m);
}

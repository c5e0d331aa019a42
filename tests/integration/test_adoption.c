/* Adopting shmguard without changing the server: abort markers from a log
 * (`shmguard abort --follow`, here behind a real nginx), preflight reaping
 * before a restart (contrib/), and `doctor --need`. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static const char *prefix, *abort_dir, *tmp;

static void setup(void)
{
	h_setup("adopt", &prefix, &abort_dir, NULL);
	tmp = h_str("/tmp/%stmp", prefix);
	cr_assert_eq(mkdir(tmp, 0755), 0, "%s: %s", tmp, strerror(errno));
}

static void teardown(void)
{
	umount2(h_str("/dev/shm/%sroot", prefix), MNT_DETACH);
	h_cleanup(prefix);
	cr_expect_eq(system(h_str("rm -rf '%s'", tmp)), 0);
}

TestSuite(follow, .init = setup, .fini = teardown, .timeout = 90);
TestSuite(restart, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(recipes, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(doctor, .init = setup, .fini = teardown, .timeout = 60);

static const char *marker(const char *id)
{
	return h_str("%s/%s", abort_dir, id);
}

static bool wait_exists(const char *path, int timeout_ms)
{
	for (long end = h_now_ms() + timeout_ms; !h_exists(path); usleep(2000))
		if (h_now_ms() >= end)
			return false;
	return true;
}

static void append(const char *path, const char *text, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
}

static void append_str(const char *path, const char *text)
{
	append(path, text, strlen(text));
}

/* `shmguard abort --follow FILE` with the given matching options. */
static struct h_proc start_follower(const char *file, const char *opt, const char *value, const char *opt2,
				    const char *value2)
{
	const char *argv[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, "--follow", file, opt, value, opt2, value2,
			      NULL};
	struct h_proc p = h_spawn(argv, NULL);

	cr_assert(h_wait_stderr(&p, strcmp(file, "-") == 0 || h_exists(file) ? "following" : "waiting for", 5000),
		  "the follower did not start");
	return p;
}

static int stop(struct h_proc *p, int sig, char **err)
{
	kill(p->pid, sig);
	return h_finish(p, err);
}

/* The log file as it is rotated, truncated, and fed bad and bulky input;
 * the markers in the abort directory are the ground truth. */
Test(follow, a_file_through_rotation_truncation_and_bad_input)
{
	const char *log = h_str("%s/app.log", tmp), *old = h_str("%s/app.log.1", tmp);
	struct h_proc p = start_follower(log, "--match", "abort id=(?<req>\\S+)", NULL, NULL);
	char *err, *big;
	size_t big_len = (2 << 20) + 100;
	int fd;

	/* A file that appears later is read from its start. */
	append_str(log, "start\nabort id=a1\n");
	cr_expect(wait_exists(marker("a1"), 1000));
	/* A line waits for its end. */
	append_str(log, "abort id=a2");
	usleep(300000);
	append_str(log, "x\n");
	cr_expect(wait_exists(marker("a2x"), 1000));
	cr_expect(!h_exists(marker("a2")), "a partial line was taken for a whole one");
	/* A 2 MiB line is skipped whole, not cut into one that would match. */
	big = malloc(big_len);
	memset(big, 'z', big_len);
	memcpy(big, "abort id=big ", 13);
	memcpy(big + big_len - 14, " abort id=end\n", 14);
	append(log, big, big_len);
	free(big);
	/* Invalid bytes around an ID; IDs the shim would refuse. */
	append_str(log, "\xff\xfe\x01 abort id=a3 \xc3\x28\nabort id=../x\nabort id=..\nabort id=.shmguard-abort-dir\n");
	cr_expect(wait_exists(marker("a3"), 1000));
	cr_expect(!h_exists(marker("big")) && !h_exists(marker("end")), "a part of an overlong line matched");
	/* Rotation: renamed away, the old file is still read... */
	cr_assert_eq(rename(log, old), 0);
	append_str(old, "abort id=a4\n");
	cr_expect(wait_exists(marker("a4"), 1000));
	/* ...and then the new one, from its start. */
	append_str(log, "abort id=a5\npadding padding padding padding padding padding padding padding padding\n");
	cr_expect(wait_exists(marker("a5"), 1000));
	/* A writer that has not reopened yet still appends to the old one. */
	append_str(old, "abort id=a5old\n");
	cr_expect(wait_exists(marker("a5old"), 1000));
	/* Truncated in place (copytruncate): read again from its start; the
	 * line it cut short is dropped, not taken for a whole one. */
	append_str(log, "abort id=cut");
	usleep(300000);
	fd = open(log, O_WRONLY | O_TRUNC | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "abort id=a6\n", 12), 12);
	close(fd);
	cr_expect(wait_exists(marker("a6"), 1000));
	/* The abort directory removed meanwhile is made again. */
	cr_assert_eq(system(h_str("rm -rf '%s'", abort_dir)), 0);
	append_str(log, "abort id=a7\n");
	cr_expect(wait_exists(marker("a7"), 1000));
	/* A burst: 5000 lines in one write. */
	size_t cap = 5000 * 24, len = 0;
	char *burst = malloc(cap);
	for (int i = 0; i < 5000; i++)
		len += (size_t)snprintf(burst + len, cap - len, "abort id=b%d\n", i);
	append(log, burst, len);
	free(burst);
	cr_expect(wait_exists(marker("b4999"), 5000));
	cr_expect_eq(h_count(abort_dir, "b"), 5000);

	/* Memory stays bounded: a 1 MiB line buffer, nothing per ID. */
	if (!getenv("SG_SANITIZED")) {
		char *status = NULL;
		const char *cat[] = {"/bin/cat", h_str("/proc/%d/status", p.pid), NULL};
		cr_assert_eq(h_output(cat, NULL, &status, NULL), 0);
		long hwm_kib = atol(strstr(status, "VmHWM:") + 6);
		cr_expect_lt(hwm_kib, 16 * 1024, "peak RSS %ld KiB", hwm_kib);
	}
	cr_expect_eq(stop(&p, SIGTERM, &err), 0, "%s", err);
	cr_expect(strstr(err, "skipped request ID '../x': it contains '/'"), "%s", err);
	cr_expect(!h_exists(marker("cut")));
	cr_expect(strstr(err, "5008 markers written, 3 invalid IDs skipped, 0 markers not written, 1 lines over 1048576 "
			      "bytes skipped, 1 unfinished lines dropped"),
		  "%s", err);
}

/* A container's log as the runtime writes it (CRI: kubelet's
 * /var/log/pods/.../N.log, podman's k8s-file): the ID of a line split into
 * parts is found once they are joined, a forged prefix inside a line is the
 * application's text, and lines without a prefix are not read. */
Test(follow, a_cri_container_log)
{
	const char *log = h_str("%s/0.log", tmp);
	const char *argv[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, "--follow", log, "--format", "cri",
			      "--match", "abort id=(?<req>\\S+)", NULL};
	struct h_proc p;
	char *err;

	append_str(log, "");
	p = h_spawn(argv, NULL);
	cr_assert(h_wait_stderr(&p, "following", 5000), "the follower did not start");
	append_str(log, "2026-12-01T20:00:00.000000001Z stdout F abort id=c1\n"
			"2026-12-01T20:00:00.000000002Z stdout P abort i\n"
			"2026-12-01T20:00:00.000000003Z stderr F noise\n"
			"2026-12-01T20:00:00.000000004Z stdout F d=c2\n"
			"abort id=plain\n"
			"2026-12-01T20:00:00.000000005Z stdout F 2026-12-01T20:00:00Z stdout F abort id=c3\n");
	cr_expect(wait_exists(marker("c1"), 2000));
	cr_expect(wait_exists(marker("c2"), 2000), "the parts of a split line were not joined");
	cr_expect(wait_exists(marker("c3"), 2000));
	cr_expect_eq(stop(&p, SIGTERM, &err), 0, "%s", err);
	cr_expect(!h_exists(marker("i")) && !h_exists(marker("plain")), "a part or a line without a prefix matched");
	cr_expect(strstr(err, "1 lines not in the CRI format dropped, 0 joined lines over"), "%s", err);
	cr_expect_eq(h_count(abort_dir, "c"), 3);

	const char *bad[] = {h_bin("SG_CLI"), "abort", "--follow", log, "--format", "json", "--preset", "vllm", NULL};
	cr_expect_eq(h_run(bad, NULL, &err), 2);
	cr_expect(strstr(err, "bad --format 'json'"), "%s", err);
}

/* A client whose request ID is "chatcmpl-att\nRequest chatcmpl-victim":
 * vLLM writes its record as two lines, "\r\n" and the prefix between them,
 * and the second is word for word another request's abort.  conmon (podman,
 * CRI-O) keeps the "\r" but writes stderr's lines between stdout's, and may
 * end a part between the "\r" and the "\n".  The record is matched whole:
 * its ID holds "\r\n", and is refused and said (escaped), in a CRI log as
 * in a plain one. */
Test(follow, a_request_id_holding_a_newline_aborts_no_other_request)
{
	const char *log = h_str("%s/0.log", tmp), *plain = h_str("%s/plain.log", tmp);
#define V "INFO 12-01 02:11:22 [async_llm.py:612] "
#define TS "2026-12-01T20:00:00.000000001+00:00 "
	const char *cri[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, "--follow", log, "--format", "cri",
			     "--preset", "vllm", NULL};
	const char *pln[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, "--follow", plain, "--preset", "vllm", NULL};
	struct h_proc p;
	char *err;

	append_str(log, "");
	p = h_spawn(cri, NULL);
	cr_assert(h_wait_stderr(&p, "following", 5000), "the follower did not start");
	append_str(log, TS "stdout F " V "Request chatcmpl-att\r\n" TS "stderr F noise\n" TS "stdout F " V
			   "Request chatcmpl-victim aborted.\n"
			   TS "stdout P " V "Request chatcmpl-att2\r\n" TS "stderr F noise\n" TS "stdout F \n" TS
			   "stdout F " V "Request chatcmpl-victim2 aborted.\n"
			   /* The barrier: a real abort after them. */
			   TS "stdout F " V "Request chatcmpl-ok aborted.\n");
	cr_assert(wait_exists(marker("chatcmpl-ok"), 2000), "the follower marked nothing");
	cr_expect_eq(stop(&p, SIGTERM, &err), 0, "%s", err);
	cr_expect(!h_exists(marker("chatcmpl-victim")) && !h_exists(marker("chatcmpl-victim2")),
		  "a client's request ID aborted another request");
	cr_expect(strstr(err, "skipped request ID 'chatcmpl-att\\x0d\\x0aINFO 12-01 02:11:22 [async_llm.py:612] "
			      "Request chatcmpl-victim': it contains a control byte"),
		  "%s", err);
	cr_expect(strstr(err, "5 lines, 3 matched, 1 markers written, 2 invalid IDs skipped"), "%s", err);

	/* The same text in a plain log. */
	append_str(plain, "");
	p = h_spawn(pln, NULL);
	cr_assert(h_wait_stderr(&p, "following", 5000), "the follower did not start");
	append_str(plain, V "Request chatcmpl-att3\r\n" V "Request chatcmpl-victim3 aborted.\n" V
			  "Request chatcmpl-ok3 aborted.\n");
	cr_assert(wait_exists(marker("chatcmpl-ok3"), 2000), "the follower marked nothing");
	cr_expect_eq(stop(&p, SIGTERM, &err), 0, "%s", err);
	cr_expect(!h_exists(marker("chatcmpl-victim3")), "a client's request ID aborted another request");
	cr_expect(strstr(err, "skipped request ID 'chatcmpl-att3\\x0d\\x0a"), "%s", err);
	cr_expect_eq(h_count(abort_dir, "chatcmpl-"), 2);
#undef V
#undef TS
}

/* stdin, a preset with a template, SIGINT, and what is refused up front. */
Test(follow, stdin_presets_signals_and_usage)
{
	const char *argv[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, "--follow", "-", "--preset", "vllm",
			      "--id-template", "x-{id}", NULL};
	const char *lines = "INFO 12-01 02:11:22 [async_llm.py:456] Aborted request(s) chatcmpl-1.\n"
			    "INFO 12-01 02:11:22 [async_llm.py:456] Aborted request(s) chatcmpl-2,chatcmpl-6.\n"
			    "INFO 12-01 02:11:22 [async_llm.py:612] Request chatcmpl-3 aborted.\n"
			    "INFO 12-01 02:11:23 [async_llm.py:300] Added request chatcmpl-4.\n"
			    "INFO 12-01 02:11:23 [async_llm.py:612] Request chatcmpl-5 aborted."; /* no newline */
	struct h_proc p = h_spawn(argv, NULL);
	char *err;

	cr_assert_eq(write(p.in, lines, strlen(lines)), (ssize_t)strlen(lines));
	cr_expect_eq(h_finish(&p, &err), 0, "%s", err); /* stdin closed: the last line counts */
	/* A list may be one ID holding a ",": reported, not marked. */
	for (int i = 1; i <= 6; i++)
		cr_expect_eq(h_exists(marker(h_str("x-chatcmpl-%d", i))), i == 1 || i == 3 || i == 5, "marker %d", i);
	cr_expect(strstr(err, "not marked: 'chatcmpl-2,chatcmpl-6' may be one request ID or several"), "%s", err);
	cr_expect(strstr(err, "5 lines, 4 matched, 3 markers written"), "%s", err);
	cr_expect(strstr(err, "1 ambiguous lists not marked"), "%s", err);

	/* SIGINT stops a follower that waits for a file. */
	p = start_follower(h_str("%s/none.log", tmp), "--preset", "sglang", NULL, NULL);
	cr_expect_eq(stop(&p, SIGINT, &err), 0, "%s", err);

	const char *bad[][4] = {
		{"--follow", "-", NULL},                            /* no --match or --preset */
		{"--follow", "-", "--match", "no group"},           /* the ID needs a group */
		{"--follow", "-", "--preset", "apache"},            /* unknown preset */
		{"--follow", "-", "--match", "(x"},                 /* bad regex */
		{"--match", "(x)", "some-id", NULL},                /* --match without --follow */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *a[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, bad[i][0], bad[i][1], bad[i][2],
				   bad[i][3], NULL};
		cr_expect_eq(h_run(a, NULL, NULL), 2, "case %zu", i);
	}
	const char *with_ids[] = {h_bin("SG_CLI"), "abort", "--follow", "-", "--preset", "vllm", "an-id", NULL};
	cr_expect_eq(h_run(with_ids, NULL, NULL), 2);
}

/* nginx in front of a streaming server ------------------------------------ */

static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
		  getsockname(s, (struct sockaddr *)&a, &len) == 0);
	close(s);
	return ntohs(a.sin_port);
}

static int connect_to(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = {.tv_sec = 5};

	if (s < 0)
		return -1;
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(s);
		return -1;
	}
	return s;
}

#define CHUNKS 8

/* One GET through nginx.  Returns the request ID nginx gave it (from the
 * first chunk); reads the whole stream, or hangs up after the first chunk. */
static char *get(int port, bool hang_up)
{
	static const char request[] = "GET /generate HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
	char buf[16384] = "", *rid;
	size_t len = 0;
	ssize_t n;
	int s = connect_to(port);

	cr_assert_geq(s, 0, "connect: %s", strerror(errno));
	cr_assert_eq(write(s, request, sizeof(request) - 1), (ssize_t)sizeof(request) - 1);
	while (!(rid = strstr(buf, " chunk=0\n")) || (!hang_up && !strstr(buf, "\r\n0\r\n\r\n"))) {
		n = read(s, buf + len, sizeof(buf) - 1 - len);
		cr_assert_gt(n, 0, "the stream ended early: %.*s", (int)len, buf);
		len += (size_t)n;
		buf[len] = '\0';
	}
	close(s);
	cr_assert_geq(rid - buf, 36, "%s", buf);
	cr_assert(hang_up || strstr(buf, h_str(" chunk=%d\n", CHUNKS - 1)), "%s", buf);
	return h_str("%.32s", rid - 32);
}

/* The access log's line for rid, waited for; NULL if none came. */
static char *log_line(const char *log, const char *rid, int timeout_ms)
{
	for (long end = h_now_ms() + timeout_ms;; usleep(2000)) {
		FILE *f = fopen(log, "r");
		char line[1024];

		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, h_str("rid=%s", rid))) {
				fclose(f);
				return h_str("%s", line);
			}
		if (f)
			fclose(f);
		if (h_now_ms() >= end)
			return NULL;
	}
}

static struct h_proc start_nginx(int port, int upstream)
{
	const char *conf = h_str("%s/nginx.conf", tmp), *nginx = getenv("SG_NGINX");
	FILE *f;

	if (!nginx || !*nginx) {
		cr_assert(!getenv("CI"), "nginx is not installed (scripts/deps.sh installs it)");
		cr_skip_test("nginx is not installed");
	}
	f = fopen(conf, "w");
	cr_assert(f);
	/* The log format docs/usage.md gives, which the nginx preset expects. */
	fprintf(f,
		"daemon off;\nworker_processes 1;\npid %s/nginx.pid;\nerror_log %s/error.log info;\n"
		"events { worker_connections 64; }\n"
		"http {\n"
		"  log_format shmguard '$remote_addr - $remote_user [$time_local] \"$request\" '\n"
		"                      '$status $body_bytes_sent complete=$request_completion rid=$request_id';\n"
		"  access_log %s/access.log shmguard;\n"
		"  client_body_temp_path %s/t1; proxy_temp_path %s/t2; fastcgi_temp_path %s/t3;\n"
		"  uwsgi_temp_path %s/t4; scgi_temp_path %s/t5;\n"
		"  server {\n"
		"    listen 127.0.0.1:%d;\n"
		"    location / {\n"
		"      proxy_pass http://127.0.0.1:%d;\n"
		"      proxy_http_version 1.1;\n"
		"      proxy_buffering off;\n"
		"      proxy_set_header X-Request-Id $request_id;\n"
		"    }\n"
		"  }\n"
		"}\n",
		tmp, tmp, tmp, tmp, tmp, tmp, tmp, tmp, port, upstream);
	fclose(f);
	const char *argv[] = {nginx, "-p", tmp, "-c", conf, "-e", h_str("%s/error.log", tmp), NULL};
	struct h_proc p = h_spawn(argv, NULL);
	for (long end = h_now_ms() + 5000;; usleep(10000)) {
		int s = connect_to(port);
		if (s >= 0) {
			close(s);
			break;
		}
		cr_assert_lt(h_now_ms(), end, "nginx did not start: %s", h_str("%s/error.log", tmp));
	}
	return p;
}

/* Clients hang up mid-stream on some requests: nginx logs them with the
 * request ID it forwarded, the follower marks them, and the server (under
 * the shim, unchanged) loses exactly their segments, within 1 s. */
Test(follow, nginx_client_hangups_reclaim_exactly_their_segments)
{
	int port = free_port(), upstream = free_port();
	const char *log = h_str("%s/access.log", tmp);
	const char *server_argv[] = {h_bin("SG_STREAM_SERVER"), h_str("%d", upstream), prefix, h_str("%d", CHUNKS), "0.05",
				     NULL};
	struct h_proc follower = start_follower(log, "--preset", "nginx", "--id-template", h_str("%s{id}", prefix));
	struct h_proc server = h_start_ready(server_argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));
	struct h_proc nginx = start_nginx(port, upstream);
	const char *done[3], *gone[3];
	char *err;

	for (int i = 0; i < 6; i++) {
		bool hang_up = i % 2;
		const char *rid = get(port, hang_up);
		char *line = log_line(log, rid, 5000);
		long t0 = h_now_ms();

		cr_assert(line, "nginx logged nothing for %s", rid);
		if (!hang_up) {
			done[i / 2] = rid;
			cr_expect(strstr(line, " 200 ") && strstr(line, " complete=OK "), "%s", line);
			continue;
		}
		gone[i / 2] = rid;
		cr_expect(strstr(line, " complete= "), "a hang-up logged as complete: %s", line);
		while (h_count("/dev/shm", h_str("%s%s", prefix, rid)) && h_now_ms() - t0 <= 1000)
			usleep(2000);
		cr_expect_eq(h_count("/dev/shm", h_str("%s%s", prefix, rid)), 0,
			     "request %s's segments still there 1 s after its log line: %s", rid, line);
	}
	/* The server may have written one more chunk before it saw the hang-up:
	 * a late put, unlinked too. */
	usleep(300000);
	for (int i = 0; i < 3; i++) {
		cr_expect_eq(h_count("/dev/shm", h_str("%s%s", prefix, gone[i])), 0, "%s", gone[i]);
		cr_expect_eq(h_count("/dev/shm", h_str("%s%s", prefix, done[i])), CHUNKS, "a completed request lost chunks");
	}
	cr_expect_eq(stop(&nginx, SIGQUIT, NULL), 0);
	cr_expect_eq(stop(&follower, SIGTERM, &err), 0, "%s", err);
	cr_expect(strstr(err, "3 markers written, 0 invalid IDs skipped"), "%s", err);
	stop(&server, SIGTERM, NULL);

	/* The next stage consumes the completed requests' chunks; the markers
	 * are those three; then nothing of this test is left in /dev/shm. */
	for (int i = 0; i < 3; i++) {
		for (int c = 0; c < CHUNKS; c++)
			cr_expect_eq(unlink(h_str("/dev/shm/%s%s_0_%d", prefix, done[i], c)), 0);
		cr_expect_eq(unlink(marker(h_str("%s%s", prefix, gone[i]))), 0);
	}
	/* And the stamp shmguard leaves in an abort directory it made. */
	cr_expect_eq(unlink(marker(".shmguard-abort-dir")), 0);
	cr_expect_eq(rmdir(abort_dir), 0, "%s: %s", abort_dir, strerror(errno));
	cr_expect_eq(h_count("/dev/shm", prefix), 0);
}

/* Preflight reaping before a restart (seed 001) ----------------------------- */

static uint64_t allocated(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

/* contrib/shmguard-preflight [-- COMMAND...] on the test's root, as a
 * container's entrypoint; its output up to the command's "ready" (or its
 * end). */
static struct h_proc preflight(const char *root, const char *const *command, char **out)
{
	const char *argv[24] = {h_str("%s/shmguard-preflight", h_bin("SG_CONTRIB"))};
	const char *env[] = {h_str("SHMGUARD=%s", h_bin("SG_CLI")),
			     /* This sandbox's init cannot be read even by root. */
			     h_str("SHMGUARD_SWEEP_ARGS=--root %s --ignore-unreadable", root), NULL};
	size_t n = 1;
	char *line;

	if (command)
		for (argv[n++] = "--"; *command; command++)
			argv[n++] = *command;
	struct h_proc p = h_spawn(argv, env);
	*out = h_str("%s", "");
	while ((line = h_read_line(&p, 10000)) && strcmp(line, "ready") != 0)
		*out = h_str("%s%s\n", *out, line);
	cr_assert(!command || line, "the server did not start after the preflight: %s", *out);
	return p;
}

/* A server under the shim that makes (or joins) the offload region path. */
static const char **server(const char *root, const char *path)
{
	const char **argv = calloc(16, sizeof(*argv));
	const char *words[] = {h_bin("SG_CLI"), "run", "--patterns", "vllm_offload_{req}.mmap", "--shm-root", root,
			       "--abort-dir", abort_dir, "--", h_bin("SG_SHMTOOL"), "region", path, "1048576", "wait"};

	memcpy(argv, words, sizeof(words));
	return argv;
}

Test(restart, preflight_reclaims_a_killed_servers_region_and_spares_the_new_one)
{
	const char *root = h_str("/dev/shm/%sroot", prefix);
	const char *old = h_str("%s/vllm_offload_%se1.mmap", root, prefix);
	const char *new = h_str("%s/vllm_offload_%se2.mmap", root, prefix);
	const char **old_server = server(root, old), **new_server = server(root, new);
	struct h_proc p;
	char *out;

	cr_assert_eq(mkdir(root, 0755), 0);
	/* The first server, started by the preflight (nothing to reclaim yet),
	 * is killed with -9: its region stays, a full megabyte. */
	p = preflight(root, old_server, &out);
	uint64_t bytes = allocated(old);
	cr_assert_geq(bytes, 1048576);
	kill(p.pid, SIGKILL);
	h_finish(&p, NULL);
	cr_assert(h_exists(old));

	/* The restart: the preflight reclaims the region and says how much,
	 * then the server, with a new engine ID, makes its own. */
	p = preflight(root, new_server, &out);
	cr_expect(!h_exists(old), "the killed server's region survived the preflight: %s", out);
	cr_expect(strstr(out, h_str("removed       %s (%llu bytes): its creator is gone", old, (unsigned long long)bytes)),
		  "%s", out);
	cr_expect(strstr(out, h_str("removed 1 file, %llu bytes", (unsigned long long)bytes)), "%s", out);
	cr_expect(h_exists(new));

	/* Later preflights (another replica starting, say) leave it alone
	 * while its server lives. */
	struct h_proc again = preflight(root, NULL, &out);
	cr_expect_eq(h_finish(&again, NULL), 0);
	cr_expect(h_exists(new), "a live server's region was swept: %s", out);
	cr_expect(strstr(out, "removed 0 files"), "%s", out);
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* The recipes in contrib/ ------------------------------------------------------ */

Test(recipes, systemd_units_verify)
{
	const char *units[] = {"vllm-shmguard.service", "shmguard-follow-nginx.service", "shmguard-audit.service"};

	if (access("/usr/bin/systemd-analyze", X_OK) != 0)
		cr_skip_test("systemd-analyze is not installed");
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		const char *copy = h_str("%s/%s", tmp, units[i]);
		/* The programs it names must exist for verify: this build's; the
		 * manual pages it names are not installed here (install-test
		 * verifies the units as the package ships them, pages included). */
		const char *sed = h_str("sed -e 's|/usr/bin/shmguard|%s|g' -e 's|/opt/vllm/bin/vllm|/bin/true|' "
					"-e '/^Documentation=/d' '%s/systemd/%s' > '%s'",
					h_bin("SG_CLI"), h_bin("SG_CONTRIB"), units[i], copy);
		const char *argv[] = {"/usr/bin/systemd-analyze", "verify", copy, NULL};
		char *out, *err;

		cr_assert_eq(system(sed), 0);
		cr_expect_eq(h_output(argv, NULL, &out, &err), 0, "%s: %s%s", units[i], out, err);
		cr_expect_str_eq(err, "", "%s", units[i]);
	}
	char *unit = NULL;
	const char *cat[] = {"/bin/cat", h_str("%s/systemd/vllm-shmguard.service", h_bin("SG_CONTRIB")), NULL};
	cr_assert_eq(h_output(cat, NULL, &unit, NULL), 0);
	cr_expect(strstr(unit, "\nExecStartPre=-+/usr/bin/shmguard sweep --dead\n"), "%s", unit);
}

Test(recipes, kubernetes_manifest_parses)
{
	static const char check[] =
		"import sys, yaml\n"
		"(d,) = yaml.safe_load_all(open(sys.argv[1]))\n"
		"pod = d['spec']['template']['spec']\n"
		"vol = [v['name'] for v in pod['volumes'] if v.get('emptyDir', {}).get('medium') == 'Memory']\n"
		"assert len(vol) == 1, vol\n"
		"init = {c['name']: c for c in pod['initContainers']}\n"
		"ctrs = {c['name']: c for c in pod['containers']}\n"
		"pre, server, side = init['shmguard-preflight'], ctrs['vllm'], ctrs['shmguard']\n"
		"for c in (pre, server, side):\n"
		"    assert {'name': vol[0], 'mountPath': '/dev/shm'} in c['volumeMounts'], c\n"
		"assert pre['command'] == ['shmguard-preflight'], pre['command']\n"
		"assert side['command'] == ['shmguard-sidecar'], side['command']\n"
		"assert pod['shareProcessNamespace'] is True\n"
		"print('ok')\n";
	const char *argv[] = {"/usr/bin/python3", "-c", check,
			      h_str("%s/kubernetes/vllm-shmguard.yaml", h_bin("SG_CONTRIB")), NULL};
	char *out, *err;

	cr_expect_eq(h_output(argv, NULL, &out, &err), 0, "%s%s", out, err);
	cr_expect_str_eq(out, "ok\n");
}

/* doctor --need -------------------------------------------------------------- */

static int doctor(const char *root, const char *need, char **out)
{
	const char *argv[] = {h_bin("SG_CLI"), "doctor", "--root", root, need ? "--need" : NULL, need, NULL};

	return h_output(argv, NULL, out, NULL);
}

/* A 1 MiB tmpfs: room for 512K when empty; not once a dead creator's 600K
 * and a live one's 300K hold it, and doctor says who holds what and what
 * sweep --dead gives back (which it then does). */
Test(doctor, need_says_whether_a_root_has_room_and_what_holds_it)
{
	const char *root = h_str("/dev/shm/%sroot", prefix);
	char *out;
	int base;

	h_private_mounts(teardown);
	cr_assert_eq(mkdir(root, 0755), 0);
	cr_assert_eq(mount("none", root, "tmpfs", 0, "size=1m"), 0, "mount tmpfs: %s", strerror(errno));
	/* Whatever else doctor finds on this machine decides the status
	 * without --need; with room, --need changes nothing. */
	base = doctor(root, NULL, &out);
	cr_expect_eq(doctor(root, "512K", &out), base, "%s", out);
	cr_expect(strstr(out, h_str("need       ok   %s has 1.0 MiB free, 512.0 KiB needed", root)), "%s", out);

	const char *dead_argv[] = {h_bin("SG_SHMTOOL"), "open", h_str("%s/big_0_0", root), "614400", "wait", NULL};
	const char *live_argv[] = {h_bin("SG_SHMTOOL"), "open", h_str("%s/small_0_0", root), "307200", "wait", NULL};
	struct h_proc dead = h_start_ready(dead_argv, h_shim_env(abort_dir, NULL, h_str("SHMGUARD_SHM_ROOTS=%s", root),
								h_str("SHMGUARD_REQUEST_ID=%sgone", prefix), NULL));
	struct h_proc live = h_start_ready(live_argv, h_shim_env(abort_dir, NULL, h_str("SHMGUARD_SHM_ROOTS=%s", root),
								h_str("SHMGUARD_REQUEST_ID=%slive", prefix), NULL));
	kill(dead.pid, SIGKILL);
	h_finish(&dead, NULL);

	/* Each creator's ownership journal takes a page of the root. */
	cr_expect_eq(doctor(root, "512K", &out), 1, "%s", out);
	cr_expect(strstr(out, h_str("need       FAIL %s has 116.0 KiB free, 512.0 KiB needed", root)), "%s", out);
	cr_expect(strstr(out, h_str("600.0 KiB  1 file of request %sgone, creator %d (dead)", prefix, (int)dead.pid)),
		  "%s", out);
	cr_expect(strstr(out, h_str("300.0 KiB  1 file of request %slive, creator %d (alive)", prefix, (int)live.pid)),
		  "%s", out);
	cr_expect(strstr(out, "600.0 KiB belongs to dead creators and no process uses it"), "%s", out);
	cr_expect_lt(strstr(out, "gone"), strstr(out, "live"), "largest first: %s", out);

	const char *sweep[] = {h_bin("SG_CLI"), "sweep", "--dead", "--root", root, "--ignore-unreadable", NULL};
	cr_expect_eq(h_output(sweep, NULL, &out, NULL), 0, "%s", out);
	cr_expect_eq(doctor(root, "512K", &out), base, "%s", out);
	cr_expect(strstr(out, h_str("need       ok   %s has 720.0 KiB free", root)), "%s", out);
	cr_expect_eq(doctor(root, "1.5GiB", &out), 1, "%s", out);
	cr_expect_eq(doctor(root, "lots", &out), 2, "%s", out);
	cr_assert_eq(h_finish(&live, NULL), 0);
}

/* The auditor's Prometheus output: the exposition text, the atomic textfile
 * and the /metrics server, spoken to over a real socket. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "metrics.h"

/* The sample's roots (the metrics take the caller's). */
static struct metrics_root roots[2];

static struct audit_metrics sample(void)
{
	struct audit_metrics m = {
		.aborts = 20,
		.aborted_held_bytes = 90112,
		.reclaimed_bytes = 1802240,
		.live_pending_bytes = 270336,
		.events = 1234,
		.dropped_events = 3,
		.files_over_limit = 1,
		.lost_markers = 2,
		.followed_files = 7,
		.freed_at_eviction = 5,
		.freed_by_review = 4,
		.aborts_measured = 18,
		.leaked_bytes = 73728,
		.last_review_unix_s = 1764619794.25,
		.last_review_duration_s = 0.5,
		.probe = "ctime",
		.version = "0.1.0",
		.nroots = 2,
		.roots = roots,
	};
	m.roots[0] = (struct metrics_root){"/dev/shm", 2097152, 4096, 1073741824, 2147483648, "", "", ""};
	m.roots[1] = (struct metrics_root){"/tmp/a \"b\"\\c", 0, 0, 5, 10, NULL, NULL, NULL};
	return m;
}

/* A root that is no pod's /dev/shm: its pod's labels are empty. */
#define NO_POD ",namespace=\"\",pod=\"\",container=\"\""

Test(metrics, exposition_text)
{
	struct audit_metrics m = sample();
	size_t len;
	char *text = metrics_render(&m, &len);

	cr_assert(text);
	cr_expect_eq(strlen(text), len);
	cr_expect(strstr(text, "# TYPE shmguard_aborts_total counter\nshmguard_aborts_total 20\n"), "%s", text);
	cr_expect(strstr(text, "\nshmguard_aborted_held_bytes 90112\n"));
	cr_expect(strstr(text, "\nshmguard_reclaimed_bytes_total 1802240\n"));
	cr_expect(strstr(text, "\nshmguard_live_pending_bytes 270336\n"));
	cr_expect(strstr(text, "\nshmguard_tracked_bytes{root=\"/dev/shm\"" NO_POD "} 2097152\n"), "%s", text);
	cr_expect(strstr(text, "\nshmguard_unattributed_bytes{root=\"/dev/shm\"" NO_POD "} 4096\n"));
	cr_expect(strstr(text, "\nshmguard_root_free_bytes{root=\"/dev/shm\"" NO_POD "} 1073741824\n"));
	/* Label values are escaped. */
	cr_expect(strstr(text, "\nshmguard_root_free_bytes{root=\"/tmp/a \\\"b\\\"\\\\c\"" NO_POD "} 5\n"), "%s", text);
	cr_expect(strstr(text, "\nshmguard_dropped_events_total 3\n"));
	cr_expect(strstr(text, "\nshmguard_files_over_limit_total 1\n"));
	cr_expect(strstr(text, "\nshmguard_lost_markers_total 2\n"));
	cr_expect(strstr(text, "# TYPE shmguard_followed_files gauge\nshmguard_followed_files 7\n"), "%s", text);
	cr_expect(strstr(text, "\nshmguard_files_freed_at_eviction_total 5\n"), "%s", text);
	cr_expect(strstr(text, "\nshmguard_files_freed_by_review_total 4\n"), "%s", text);
	cr_expect(strstr(text, "\nshmguard_build_info{version=\"0.1.0\",probe=\"ctime\"} 1\n"), "%s", text);
	cr_expect_null(strstr(text, "shmguard_audit_info"), "the old name");
	/* Counters whose rates give the leak per abort, and the review's age. */
	cr_expect(strstr(text, "# TYPE shmguard_aborts_measured_total counter\nshmguard_aborts_measured_total 18\n"),
		  "%s", text);
	cr_expect(strstr(text, "# TYPE shmguard_leaked_bytes_total counter\nshmguard_leaked_bytes_total 73728\n"),
		  "%s", text);
	cr_expect(strstr(text, "\nshmguard_last_review_timestamp_seconds 1764619794.250\n"), "%s", text);
	cr_expect(strstr(text, "\nshmguard_last_review_duration_seconds 0.500\n"), "%s", text);
	cr_expect(strstr(text, "\nshmguard_root_size_bytes{root=\"/dev/shm\"" NO_POD "} 2147483648\n"), "%s", text);
	/* Labels: root (and its pod's) on the per-root series, and only there. */
	for (char *line = text; *line; line = strchr(line, '\n') + 1) {
		char *brace = strchr(line, '{'), *nl = strchr(line, '\n');
		if (line[0] == '#' || !brace || brace > nl || strncmp(line, "shmguard_build_info{", 20) == 0)
			continue;
		cr_expect_eq(strncmp(brace, "{root=\"", 7), 0, "a label other than root: %.60s", line);
	}
	/* Every sample line belongs to a family declared just before. */
	for (char *line = text; *line; line = strchr(line, '\n') + 1) {
		if (line[0] != '#')
			cr_expect(strncmp(line, "shmguard_", 9) == 0, "stray line: %.40s", line);
	}
	free(text);
}

Test(metrics, textfile_is_replaced_whole)
{
	char dir[] = "/tmp/sgt-metrics-XXXXXX", path[64], buf[64] = {0}, err[256];
	struct stat st;
	FILE *f;

	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/shmguard.prom", dir);
	cr_assert_eq(metrics_write_file(path, "first 1\n", 8, err, sizeof(err)), 0);
	cr_assert_eq(metrics_write_file(path, "second 2\n", 9, err, sizeof(err)), 0);
	f = fopen(path, "r");
	cr_assert(f);
	cr_expect_eq(fread(buf, 1, sizeof(buf) - 1, f), 9);
	fclose(f);
	cr_expect_str_eq(buf, "second 2\n");
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0644);
	/* Nothing else is left in the directory. */
	char *cmd;
	cr_assert(asprintf(&cmd, "test $(ls -A %s | wc -l) -eq 1", dir) > 0);
	cr_expect_eq(system(cmd), 0, "a temporary file was left in %s", dir);
	unlink(path);
	rmdir(dir);
	free(cmd);
	cr_expect_eq(metrics_write_file("/nonexistent-dir/x.prom", "x\n", 2, err, sizeof(err)), -ENOENT);
}

/* Prometheus's own linter reads text as valid exposition format. */
static void expect_promtool_passes(const char *text, size_t len)
{
	char path[] = "/tmp/sgt-metrics-XXXXXX", cmd[128];
	int fd, status;

	cr_assert((fd = mkstemp(path)) >= 0);
	cr_assert_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", path);
	status = system(cmd);
	unlink(path);
	cr_expect_eq(status, 0, "promtool check metrics failed on:\n%s", text);
}

/* A connection to the server from the loopback address from (127.0.0.1,
 * or another of 127/8: another client address as the server sees it). */
static int dial_from(const char *from, unsigned port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct sockaddr_in src = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	inet_pton(AF_INET, from, &src.sin_addr);
	cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&src, sizeof(src)) == 0);
	cr_assert(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	return fd;
}

static int dial(unsigned port)
{
	return dial_from("127.0.0.1", port);
}

/* One HTTP/1.0 exchange; the whole answer, or NULL after 5 s. */
static char *http(unsigned port, const char *request)
{
	static char buf[65536];
	size_t len = 0;
	int fd = dial(port);

	cr_assert_eq(write(fd, request, strlen(request)), (ssize_t)strlen(request));
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 5000) != 1) {
			close(fd);
			return NULL;
		}
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}

Test(metrics, server_answers_metrics_and_nothing_else)
{
	char err[256];
	struct metrics_server *s = metrics_serve("127.0.0.1:0", err, sizeof(err));
	char *r;

	cr_assert(s, "%s", err);
	unsigned port = metrics_port(s);
	cr_assert_gt(port, 0);

	r = http(port, "GET /metrics HTTP/1.0\r\n\r\n");
	cr_assert(r);
	cr_expect(strstr(r, " 503 "), "before any figures: %s", r);

	struct audit_metrics m = sample();
	size_t len;
	char *text = metrics_render(&m, &len);
	metrics_publish(s, text, len);

	/* A client that connects and says nothing does not hold the others up. */
	int idle = dial(port);
	r = http(port, "GET /metrics HTTP/1.0\r\n\r\n");
	cr_assert(r, "no answer while another client idles");
	cr_expect(strstr(r, " 200 "), "%s", r);
	cr_expect(strstr(r, "text/plain; version=0.0.4"), "%s", r);
	cr_expect(strstr(r, "\r\n\r\n# HELP shmguard_aborts_total"), "%s", r);
	cr_expect(strstr(r, "shmguard_aborts_total 20\n"));

	r = http(port, "GET / HTTP/1.0\r\n\r\n");
	cr_assert(r);
	cr_expect(strstr(r, " 404 "), "%s", r);
	r = http(port, "DELETE /metrics HTTP/1.0\r\n\r\n");
	cr_assert(r);
	cr_expect(strstr(r, " 405 "), "%s", r);
	/* A malformed request is turned away at once, and the server goes on. */
	r = http(port, "garbage\r\n\r\n");
	cr_assert(r, "a malformed request kept its connection open");
	cr_expect_null(strstr(r, " 200 "), "%s", r);
	r = http(port, "GET /metrics HTTP/1.0\r\n\r\n");
	cr_assert(r);
	cr_expect(strstr(r, " 200 "), "after a malformed request: %s", r);

	close(idle);
	metrics_stop(s);
	free(text);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether the server has closed fd (end of stream, or a reset). */
static bool closed_by_server(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char c;

	return poll(&p, 1, 0) == 1 && recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

#define SLOW_CLIENTS 40

/* Issue 17, finding 15: slowloris.  40 connections from one address, each
 * sending a byte of its request every second (under the idle timeout, so
 * that never ends them): a scrape from another address is still answered,
 * the slow address holds only a few connections, and each of those is cut
 * at the deadline for a request's headers (2 s), however it trickles. */
Test(metrics, slow_clients_do_not_stop_the_scrapes, .timeout = 40)
{
	static const char request[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
	char err[256];
	struct metrics_server *s = metrics_serve("127.0.0.1:0", err, sizeof(err));
	struct audit_metrics m = sample();
	int slow[SLOW_CLIENTS];
	bool open[SLOW_CLIENTS];
	size_t len, sent = 0;
	char *text = metrics_render(&m, &len), *r;
	unsigned held = 0, still_open;
	long t0 = now_ms();

	cr_assert(s, "%s", err);
	metrics_publish(s, text, len);
	for (int i = 0; i < SLOW_CLIENTS; i++) {
		slow[i] = dial_from("127.0.0.2", metrics_port(s));
		open[i] = true;
	}
	/* Bounded: the deadline and three seconds more. */
	do {
		still_open = 0;
		for (int i = 0; i < SLOW_CLIENTS; i++) {
			if (open[i] && (closed_by_server(slow[i]) ||
					send(slow[i], request + sent % (sizeof(request) - 1), 1, MSG_NOSIGNAL) != 1))
				open[i] = false;
			still_open += open[i];
		}
		sent++;
		if (sent == 3) {
			held = still_open;
			r = http(metrics_port(s), "GET /metrics HTTP/1.0\r\n\r\n");
			cr_assert(r, "no answer to a scrape while %u slow clients trickle", still_open);
			cr_expect(strstr(r, " 200 "), "%s", r);
		}
		usleep(1000 * 1000);
	} while (still_open && now_ms() - t0 < 13000);
	cr_expect_leq(held, 8, "one address holds %u connections", held);
	cr_expect_eq(still_open, 0, "%u slow connections outlived the request deadline", still_open);
	cr_expect_geq(now_ms() - t0, 1500, "the slow connections were cut before their deadline");
	for (int i = 0; i < SLOW_CLIENTS; i++)
		close(slow[i]);
	metrics_stop(s);
	free(text);
}

/* Issue 29: every slot held.  Connections from 127.0.0.2 to 127.0.0.9, 8
 * each (the limit per address), fill the 64 slots and are made again as
 * soon as the server ends them; they send nothing.  A scraper from
 * 127.0.0.1 still gets 8 scrapes of 8: a new connection ends the one that
 * has waited longest without a request. */
#define HOLDERS 64

struct holders {
	unsigned port;
	volatile bool stop;
	unsigned redials;
};

static int dial_quiet(const char *from, unsigned port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct sockaddr_in src = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	inet_pton(AF_INET, from, &src.sin_addr);
	if (fd >= 0 && (bind(fd, (struct sockaddr *)&src, sizeof(src)) != 0 ||
			connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void *hold_slots(void *arg)
{
	struct holders *h = arg;
	int fds[HOLDERS];
	char from[HOLDERS][16];

	for (int i = 0; i < HOLDERS; i++) {
		snprintf(from[i], sizeof(from[i]), "127.0.0.%d", 2 + i / 8);
		fds[i] = dial_quiet(from[i], h->port);
	}
	while (!h->stop) {
		for (int i = 0; i < HOLDERS; i++) {
			if (fds[i] >= 0 && !closed_by_server(fds[i]))
				continue;
			if (fds[i] >= 0)
				close(fds[i]);
			fds[i] = dial_quiet(from[i], h->port);
			h->redials++;
		}
		usleep(20 * 1000);
	}
	for (int i = 0; i < HOLDERS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return NULL;
}

Test(metrics, a_scraper_is_answered_while_every_slot_is_held, .timeout = 40)
{
	char err[256];
	struct metrics_server *s = metrics_serve("127.0.0.1:0", err, sizeof(err));
	struct audit_metrics m = sample();
	struct holders h = {0};
	pthread_t t;
	size_t len;
	char *text = metrics_render(&m, &len);
	unsigned answered = 0;

	cr_assert(s, "%s", err);
	metrics_publish(s, text, len);
	h.port = metrics_port(s);
	cr_assert_eq(pthread_create(&t, NULL, hold_slots, &h), 0);
	usleep(500 * 1000); /* the holders are in */
	for (int i = 0; i < 8; i++) {
		char *r = http(h.port, "GET /metrics HTTP/1.0\r\n\r\n");

		answered += r && strstr(r, " 200 ");
		usleep(500 * 1000);
	}
	h.stop = true;
	pthread_join(t, NULL);
	cr_expect_eq(answered, 8, "%u scrapes of 8 answered while 64 connections held the slots", answered);
	cr_expect_gt(h.redials, 0, "the holders never lost a connection: the test held nothing");
	metrics_stop(s);
	free(text);
}

/* Issue 29: a cgroup or pod name is any bytes a pod's root or a local user
 * chose.  Bytes that are not UTF-8 and control characters are written as
 * \xNN, so Prometheus still takes the whole scrape, and a valid name is
 * kept as it is. */
Test(metrics, hostile_label_bytes_keep_the_scrape_valid)
{
	struct metrics_workload ws[] = {
		{.namespace_ = "ns\xc3\xa9", .pod = "p\xff\xfe", .container = "c\x1b[31m", .container_id = "\xc2\x9b" "2J",
		 .cgroup = "/user.slice/\xed\xa0\x80\xc0\xaf\"x", .cgroup_id = 9, .aborts_measured = 1},
	};
	struct audit_metrics m = sample();
	size_t len;
	char *text;

	m.workloads = ws;
	m.nworkloads = 1;
	cr_assert(text = metrics_render(&m, &len));
	cr_expect(strstr(text, "{namespace=\"ns\xc3\xa9\",pod=\"p\\\\xff\\\\xfe\",container=\"c\\\\x1b[31m\","
			       "container_id=\"\\\\xc2\\\\x9b2J\",id=\"/user.slice/\\\\xed\\\\xa0\\\\x80"
			       "\\\\xc0\\\\xaf\\\"x\",cgroup_id=\"9\"} 1\n"),
		  "%s", text);
	expect_promtool_passes(text, len);
	free(text);
}

/* Issue 22: a host name is accepted, and port 0 becomes a real port that
 * the server says. */
Test(metrics, a_host_name_and_port_zero_give_the_address_bound)
{
	char err[256], want[32];
	struct metrics_server *s = metrics_serve("localhost:0", err, sizeof(err));

	cr_assert(s, "%s", err);
	cr_assert_gt(metrics_port(s), 0);
	snprintf(want, sizeof(want), "127.0.0.1:%u", metrics_port(s));
	if (strcmp(metrics_address(s), want) != 0)
		snprintf(want, sizeof(want), "[::1]:%u", metrics_port(s));
	cr_expect_str_eq(metrics_address(s), want);
	metrics_stop(s);
}

/* The metric names a file of contrib/ uses (shmguard_ and a name; the
 * recording rules' shmguard: names are the file's own), each asserted to
 * be a family the auditor exports; how many were found. */
static int names_exported(const char *file, const char *exported)
{
	char *path, *text = NULL, family[160];
	size_t len = 0;
	int found = 0;

	cr_assert(getenv("SG_CONTRIB"), "SG_CONTRIB is not set (meson test sets it)");
	cr_assert(asprintf(&path, "%s/%s", getenv("SG_CONTRIB"), file) > 0);
	FILE *f = fopen(path, "r");
	cr_assert(f, "%s", path);
	cr_assert_geq(getdelim(&text, &len, '\0', f), 0);
	fclose(f);
	for (char *p = text; (p = strstr(p, "shmguard_"));) {
		size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_");
		snprintf(family, sizeof(family), "# TYPE %.*s ", (int)n, p);
		cr_expect(strstr(exported, family), "%s names %.*s, which the auditor does not export", file, (int)n, p);
		found++;
		p += n;
	}
	free(text);
	free(path);
	return found;
}

/* Issue 22: the alerts and the dashboard use the names the auditor has. */
Test(metrics, the_alerts_and_the_dashboard_name_exported_metrics)
{
	struct audit_metrics m = sample();
	size_t len;
	char *text = metrics_render(&m, &len);

	cr_assert(text);
	cr_expect_geq(names_exported("prometheus/shmguard-alerts.yml", text), 6);
	cr_expect_geq(names_exported("grafana/shmguard-dashboard.json", text), 15);
	free(text);
}

Test(metrics, bad_listen_addresses)
{
	char err[256];

	cr_expect_null(metrics_serve("localhost", err, sizeof(err)));
	cr_expect(strstr(err, "bad listen address"), "%s", err);
	cr_expect_null(metrics_serve("no-such-host.invalid:0", err, sizeof(err)));
	cr_expect(strstr(err, "cannot resolve"), "%s", err);
	cr_expect_null(metrics_serve("127.0.0.1:70000", err, sizeof(err)));
	cr_expect_null(metrics_serve("[::1:9464", err, sizeof(err)));
	cr_expect_null(metrics_serve("192.0.2.1:0", err, sizeof(err)), "an address not of this machine");
	cr_expect(strstr(err, "cannot listen"), "%s", err);
}

/* A workload's series carry the labels cAdvisor and kube-state-metrics use,
 * each value escaped: a cgroup's name is chosen by whoever made it. */
Test(metrics, workload_series_are_labelled_and_escaped)
{
	const struct metrics_workload ws[] = {
		{.namespace_ = "serving", .pod = "vllm-0", .container = "", .container_id = "4f1a",
		 .cgroup = "/kubepods/pod1/4f1a", .cgroup_id = 7, .aborts_measured = 10, .leaked_bytes = 491520,
		 .aborted_held_bytes = 491520, .tracked_bytes = 500000},
		{.namespace_ = "", .pod = "", .container = "", .container_id = "",
		 .cgroup = "/user.slice/a\"b\\c\nd", .cgroup_id = 8},
	};
	struct audit_metrics m = sample();
	size_t len;
	char *text;

	m.workloads = ws;
	m.nworkloads = 2;
	m.abort_book.without_workload = 3;
	m.abort_book.records = 5;
	cr_assert(text = metrics_render(&m, &len));
	cr_expect(strstr(text, "\nshmguard_workload_aborts_measured_total{namespace=\"serving\",pod=\"vllm-0\","
			       "container=\"\",container_id=\"4f1a\",id=\"/kubepods/pod1/4f1a\",cgroup_id=\"7\"} 10\n"),
		  "%s", text);
	cr_expect(strstr(text, "\nshmguard_workload_leaked_bytes_total{namespace=\"serving\""), "%s", text);
	cr_expect(strstr(text, "id=\"/user.slice/a\\\"b\\\\c\\nd\",cgroup_id=\"8\"} 0\n"), "%s", text);
	cr_expect(strstr(text, "\nshmguard_aborts_without_workload_total 3\n"), "%s", text);
	cr_expect(strstr(text, "\nshmguard_abort_records 5\n"), "%s", text);
	expect_promtool_passes(text, len);
	free(text);
}

/* Issue 31 §5: a root that is a pod's /dev/shm carries the pod's
 * namespace, name and container, as the workloads' series do, so that its
 * headroom can be graphed and alerted on by pod; each value escaped, one
 * series per root. */
Test(metrics, root_series_carry_their_pod)
{
	struct metrics_root pods[] = {
		{"/dev/shm of pid 42 (mnt:[4026532000])", 4096, 0, 6710886, 67108864, "serving", "vllm-0", "server"},
		{"/dev/shm of pid 43 (mnt:[4026532001])", 0, 0, 5, 10, "ns\x1b[2J", "p\"o\\d\n", ""},
	};
	struct audit_metrics m = sample();
	size_t len;
	char *text;

	m.roots = pods;
	cr_assert(text = metrics_render(&m, &len));
	cr_expect(strstr(text, "\nshmguard_root_free_bytes{root=\"/dev/shm of pid 42 (mnt:[4026532000])\","
			       "namespace=\"serving\",pod=\"vllm-0\",container=\"server\"} 6710886\n"), "%s", text);
	cr_expect(strstr(text, "\nshmguard_root_size_bytes{root=\"/dev/shm of pid 42 (mnt:[4026532000])\","
			       "namespace=\"serving\",pod=\"vllm-0\",container=\"server\"} 67108864\n"), "%s", text);
	cr_expect(strstr(text, "\nshmguard_tracked_bytes{root=\"/dev/shm of pid 42 (mnt:[4026532000])\","
			       "namespace=\"serving\",pod=\"vllm-0\",container=\"server\"} 4096\n"), "%s", text);
	cr_expect(strstr(text, ",namespace=\"ns\\\\x1b[2J\",pod=\"p\\\"o\\\\d\\n\",container=\"\"} 5\n"), "%s", text);
	cr_expect_null(strchr(text, '\x1b'), "an escape sequence in the exposition");
	/* One series per root in each family. */
	const char *family = "\nshmguard_root_free_bytes{";
	int n = 0;
	for (const char *p = text; (p = strstr(p, family)); p += strlen(family))
		n++;
	cr_expect_eq(n, 2, "%s", text);
	expect_promtool_passes(text, len);
	free(text);
}

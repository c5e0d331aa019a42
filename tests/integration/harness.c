#include "harness.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <grp.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "journal.h"

extern char **environ;

/* Children still running, ended by h_cleanup(): a test that fails half-way
 * must not leave a shim behind that recreates what the cleanup removes. */
static struct {
	pid_t pid;
	char err[128];
} live[64];
static size_t nlive;

/* Every child started, for the journals they may leave (h_cleanup). */
static pid_t spawned[256];
static size_t nspawned;

static void die(const char *what)
{
	fprintf(stderr, "harness: %s: %s\n", what, strerror(errno));
	abort();
}

const char *h_bin(const char *var)
{
	const char *v = getenv(var);

	if (!v || !*v) {
		fprintf(stderr, "harness: %s is not set (run the tests with meson test)\n", var);
		abort();
	}
	return v;
}

char *h_str(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		die("vasprintf");
	va_end(ap);
	return s;
}

const char *h_prefix(const char *tag)
{
	return h_str("sgt-%d-%s-", (int)getpid(), tag);
}

void h_setup(const char *tag, const char **prefix, const char **abort_dir, const char **root)
{
	*prefix = h_prefix(tag);
	*abort_dir = h_str("/dev/shm/%sabort", *prefix);
	if (root)
		*root = h_str("/dev/shm/%sroot", *prefix);
}

void h_teardown(const char *prefix, const char *root)
{
	if (root)
		umount2(root, MNT_DETACH);
	h_cleanup(prefix);
}

const char *h_in(const char *dir, const char *name)
{
	return h_str("%s/%s", dir, name);
}

long h_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* environ, with env's entries replacing those of the same name. */
static char **merged_env(const char *const *env)
{
	size_t n = 0, m = 0, k = 0;
	char **out;

	while (environ[n])
		n++;
	while (env && env[m])
		m++;
	out = calloc(n + m + 1, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		size_t len = strcspn(environ[i], "=");
		bool replaced = false;
		for (size_t j = 0; j < m; j++)
			replaced |= strncmp(env[j], environ[i], len) == 0 && env[j][len] == '=';
		if (!replaced)
			out[k++] = environ[i];
	}
	for (size_t j = 0; j < m; j++)
		out[k++] = (char *)env[j];
	return out;
}

/* The user the next child runs as (h_spawn_as), NULL: this process's. */
static const struct h_user *spawn_user;

struct h_proc h_spawn(const char *const *argv, const char *const *env)
{
	struct h_proc p;
	int in[2], out[2], errfd;

	snprintf(p.err, sizeof(p.err), "/tmp/sgt-stderr-XXXXXX");
	errfd = mkstemp(p.err);
	if (errfd < 0 || pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		die("spawn setup");
	p.pid = fork();
	if (p.pid < 0)
		die("fork");
	if (p.pid == 0) {
		setpgid(0, 0); /* its own group: h_cleanup() ends grandchildren too */
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(errfd, 2);
		if (spawn_user && (setgroups(0, NULL) < 0 || setgid(spawn_user->gid) < 0 ||
				   setuid(spawn_user->uid) < 0)) {
			fprintf(stderr, "harness: cannot become %s: %s\n", spawn_user->name, strerror(errno));
			_exit(127);
		}
		execve(argv[0], (char *const *)argv, merged_env(env));
		fprintf(stderr, "harness: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	if (spawn_user && fchown(errfd, spawn_user->uid, spawn_user->gid) < 0)
		die("chown stderr file");
	close(errfd);
	if (nspawned < sizeof(spawned) / sizeof(spawned[0]))
		spawned[nspawned++] = p.pid;
	if (nlive < sizeof(live) / sizeof(live[0])) {
		live[nlive].pid = p.pid;
		memcpy(live[nlive++].err, p.err, sizeof(p.err));
	}
	p.in = in[1];
	p.out = out[0];
	return p;
}

char *h_read_line(struct h_proc *p, int timeout_ms)
{
	char buf[4096];
	size_t len = 0;
	long deadline = h_now_ms() + timeout_ms;

	/* One byte at a time: nothing past the newline is consumed. */
	while (len < sizeof(buf) - 1) {
		struct pollfd pfd = {.fd = p->out, .events = POLLIN};
		long left = deadline - h_now_ms();
		char c;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return NULL;
		if (read(p->out, &c, 1) != 1)
			return NULL;
		if (c == '\n')
			break;
		buf[len++] = c;
	}
	buf[len] = '\0';
	return h_str("%s", buf);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *data = NULL;
	size_t cap = 0;

	if (!f)
		return h_str("%s", "");
	ssize_t n = getdelim(&data, &cap, '\0', f);
	fclose(f);
	if (n < 0) {
		free(data);
		return h_str("%s", "");
	}
	return data;
}

int h_finish(struct h_proc *p, char **err)
{
	int status;

	close(p->in);
	while (waitpid(p->pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	close(p->out);
	for (size_t i = 0; i < nlive; i++)
		if (live[i].pid == p->pid)
			live[i] = live[--nlive];
	if (err)
		*err = slurp(p->err);
	unlink(p->err);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int h_run(const char *const *argv, const char *const *env, char **err)
{
	struct h_proc p = h_spawn(argv, env);
	return h_finish(&p, err);
}

char *h_read_all(struct h_proc *p, int timeout_ms)
{
	size_t len = 0, cap = 4096;
	char *all = malloc(cap), *line;

	if (!all)
		die("malloc");
	all[0] = '\0';
	/* Grown by doubling, each line freed: a long output costs its size. */
	while ((line = h_read_line(p, timeout_ms))) {
		size_t n = strlen(line);

		while (len + n + 2 > cap)
			if (!(all = realloc(all, cap *= 2)))
				die("realloc");
		memcpy(all + len, line, n);
		all[len += n] = '\n';
		all[++len] = '\0';
		free(line);
	}
	return all;
}

int h_output(const char *const *argv, const char *const *env, char **out, char **err)
{
	struct h_proc p = h_spawn(argv, env);

	*out = h_read_all(&p, 30000);
	return h_finish(&p, err);
}

bool h_exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

/* A wait for something that must happen returns as soon as it does: its
 * bound only decides how long a failure takes to say so.  The bounds the
 * tests write are an idle machine's; CI runs the suites side by side, under
 * sanitizers too, where a sweep has taken over a second. */
static long patient(int timeout_ms)
{
	long ms = (long)timeout_ms * 5;

	return timeout_ms >= 10000 ? timeout_ms : ms < 10000 ? ms : 10000;
}

bool h_wait_gone(const char *path, int timeout_ms)
{
	long deadline = h_now_ms() + patient(timeout_ms);

	for (;;) {
		if (!h_exists(path))
			return true;
		if (h_now_ms() >= deadline)
			return false;
		usleep(2000);
	}
}

static void remove_tree(int parent, const char *name)
{
	if (unlinkat(parent, name, 0) == 0 || errno != EISDIR)
		return;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (d) {
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				remove_tree(dirfd(d), e->d_name);
		closedir(d);
	}
	unlinkat(parent, name, AT_REMOVEDIR);
}

void h_plant_journal(const char *dir, const char *name, const char *request, uint64_t pidns, pid_t pid,
		     uint64_t start)
{
	struct sg_journal_head head;
	char rec[SG_JOURNAL_MAX_SPAN * SG_JOURNAL_SLOT];
	struct timespec now;
	struct stat st;
	uint64_t created;
	int fd, span;

	fd = open(h_str("%s/%s", dir, name), O_CREAT | O_EXCL | O_RDWR, 0600);
	cr_assert_geq(fd, 0, "%s/%s: %s", dir, name, strerror(errno));
	cr_assert_eq(ftruncate(fd, 4096), 0);
	cr_assert_eq(fstat(fd, &st), 0);
	close(fd);
	clock_gettime(CLOCK_REALTIME, &now);
	created = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	sg_journal_head_init(&head, pid, start, pidns, created);
	memset(rec, 0, sizeof(rec));
	span = sg_journal_rec_commit(rec, st.st_ino, created, request, name);
	cr_assert_gt(span, 0);
	fd = open(h_str("%s/" SG_JOURNAL_PREFIX "%s", dir, name), O_CREAT | O_EXCL | O_WRONLY, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, &head, sizeof(head)), (ssize_t)sizeof(head));
	cr_assert_eq(write(fd, rec, (size_t)span * SG_JOURNAL_SLOT), (ssize_t)((size_t)span * SG_JOURNAL_SLOT));
	close(fd);
}

struct journal_names {
	const char *prefix;
	size_t len, ours, others;
};

static int count_names(const struct sg_journal_entry *e, void *opaque)
{
	struct journal_names *n = opaque;
	/* Lock files carry the prefix after "shm_", semaphores after "sem.". */
	const char *name = strncmp(e->name, "shm_", 4) == 0 || strncmp(e->name, "sem.", 4) == 0 ? e->name + 4 : e->name;

	if (strncmp(e->name, n->prefix, n->len) == 0 || strncmp(name, n->prefix, n->len) == 0)
		n->ours++;
	else
		n->others++;
	return 0;
}

/* Whether the journal in /dev/shm called name is one this test's processes
 * left: every file it names bears the prefix, or it names none and its
 * creator is a child this test started.  (The shim removes its journal at
 * exit once its files are gone; a killed one, or one whose files the
 * cleanup removes after it ended, leaves it.) */
static bool our_journal(int dfd, const char *name, const char *prefix)
{
	struct journal_names n = {prefix, strlen(prefix), 0, 0};
	struct sg_journal_head head;
	static char buf[1 << 20];
	bool ours = false;
	ssize_t len;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return false;
	len = read(fd, buf, sizeof(buf));
	close(fd);
	if (len <= 0 || sg_journal_parse(buf, (size_t)len, &head, count_names, &n) < 0)
		return false;
	if (n.ours)
		return !n.others;
	for (size_t i = 0; i < nspawned && !ours; i++)
		ours = spawned[i] == (pid_t)head.pid;
	return ours && !n.others;
}

void h_cleanup(const char *prefix)
{
	struct dirent *e;
	size_t len = strlen(prefix);

	for (; nlive; nlive--) {
		kill(-live[nlive - 1].pid, SIGKILL);
		waitpid(live[nlive - 1].pid, NULL, 0);
		unlink(live[nlive - 1].err);
	}
	DIR *d = opendir("/dev/shm");
	if (!d)
		return;
	/* Lock files carry the prefix after "shm_". */
	while ((e = readdir(d)))
		if (strncmp(e->d_name, prefix, len) == 0 ||
		    (strncmp(e->d_name, "shm_", 4) == 0 && strncmp(e->d_name + 4, prefix, len) == 0))
			remove_tree(dirfd(d), e->d_name);
	rewinddir(d);
	while ((e = readdir(d)))
		if (sg_journal_name(e->d_name) && our_journal(dirfd(d), e->d_name, prefix))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
}

int h_count(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

int h_occurrences(const char *haystack, const char *needle)
{
	int n = 0;

	for (const char *p = haystack; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

const char **h_shim_env(const char *abort_dir, const char *patterns, ...)
{
	const char **env = calloc(12, sizeof(*env));
	size_t n = 0;
	va_list ap;
	const char *e;

	env[n++] = h_str("LD_PRELOAD=%s", h_bin("SG_SHIM"));
	env[n++] = h_str("SHMGUARD_ABORT_DIR=%s", abort_dir);
	env[n++] = "SHMGUARD_LOG=info";
	if (patterns)
		env[n++] = h_str("SHMGUARD_PATTERNS=%s", patterns);
	va_start(ap, patterns);
	while (n < 11 && (e = va_arg(ap, const char *)))
		env[n++] = e;
	va_end(ap);
	return env;
}

bool h_wait_stderr(struct h_proc *p, const char *needle, int timeout_ms)
{
	long deadline = h_now_ms() + patient(timeout_ms);

	for (;;) {
		char *text = slurp(p->err);
		bool found = strstr(text, needle) != NULL;
		free(text);
		if (found)
			return true;
		if (h_now_ms() >= deadline)
			return false;
		usleep(5000);
	}
}

const char **h_audit_argv(const char *abort_dir, const char *patterns, const char *json, const char *const *options,
			  const char *const *cmd)
{
	const char *head[] = {h_bin("SG_CLI"), "audit", "--abort-dir", abort_dir, "--patterns", patterns, "--grace",
			      "0.3", "--json", json, "--lib", h_bin("SG_SHIM"), "--interval", "0.1"};
	size_t n = sizeof(head) / sizeof(head[0]), total = n + 2;
	const char **argv;

	for (size_t i = 0; options && options[i]; i++)
		total++;
	for (size_t i = 0; cmd[i]; i++)
		total++;
	argv = calloc(total, sizeof(*argv));
	cr_assert_not_null(argv);
	memcpy(argv, head, sizeof(head));
	while (options && *options)
		argv[n++] = *options++;
	argv[n++] = "--";
	while (*cmd)
		argv[n++] = *cmd++;
	return argv;
}

void h_wait_measured(struct h_proc *p, int aborts)
{
	cr_assert(h_wait_stderr(p, h_str("(measured %d)", aborts), 20000), "the auditor never measured %d aborts",
		  aborts);
}

struct h_proc h_start_ready(const char *const *argv, const char *const *env)
{
	struct h_proc p = h_spawn(argv, env);
	char *line = h_read_line(&p, 20000);

	if (!line || strcmp(line, "ready") != 0) {
		char *err;
		h_finish(&p, &err);
		fprintf(stderr, "harness: %s did not get ready (said '%s'); its stderr:\n%s\n", argv[0],
			line ? line : "(nothing)", err);
		abort();
	}
	free(line);
	return p;
}

void h_abort(const char *abort_dir, ...)
{
	const char *argv[16] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, "--no-sweep"};
	size_t n = 5;
	va_list ap;
	char *err;
	int status;

	va_start(ap, abort_dir);
	while (n < 15 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	status = h_run(argv, NULL, &err);
	if (status != 0) {
		fprintf(stderr, "harness: shmguard abort exited %d: %s\n", status, err);
		abort();
	}
	free(err);
}

void h_skip(void (*teardown)(void), const char *why)
{
	teardown();
	cr_skip_test("%s", why);
}

bool h_have_auditor(void)
{
	return strcmp(h_bin("SG_AUDITOR"), "1") == 0;
}

void h_need_bpf(void (*teardown)(void))
{
	if (!h_have_auditor())
		h_skip(teardown, "this shmguard was built without the auditor (test-cli checks what audit says)");
	if (geteuid() == 0)
		return;
	cr_assert(!getenv("CI"), "the tests that trace with BPF must run as root in CI");
	h_skip(teardown, "needs root for BPF");
}

void h_private_mounts(void (*teardown)(void))
{
	if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0)
		return;
	cr_assert(!getenv("CI"), "cannot make a mount namespace in CI: %s", strerror(errno));
	h_skip(teardown, "needs CAP_SYS_ADMIN for a private mount namespace");
}

void h_mount_root(const char *dir, const char *type, const char *options, void (*teardown)(void))
{
	h_private_mounts(teardown);
	cr_assert_eq(mkdir(dir, 0755), 0, "mkdir %s: %s", dir, strerror(errno));
	cr_assert_eq(mount("none", dir, type, 0, options), 0, "mount %s: %s", type, strerror(errno));
}

static struct h_user hostile;

static void remove_hostile_user(void)
{
	const char *argv[] = {"/usr/sbin/userdel", hostile.name, NULL};

	h_run(argv, NULL, NULL);
}

const struct h_user *h_hostile_user(void)
{
	struct passwd *pw;

	if (hostile.name)
		return &hostile;
	if (geteuid() != 0) {
		cr_assert(!getenv("CI"), "the hostile-user tests must run as root in CI");
		cr_skip_test("needs root to create a second user");
	}
	hostile.name = h_str("sgt%d", (int)getpid());
	const char *argv[] = {"/usr/sbin/useradd", "--system", "--no-create-home", "--shell",
			      "/usr/sbin/nologin", hostile.name, NULL};
	char *err;
	int status = h_run(argv, NULL, &err);
	cr_assert_eq(status, 0, "useradd %s: %s", hostile.name, err);
	atexit(remove_hostile_user);
	pw = getpwnam(hostile.name);
	cr_assert(pw, "user %s not found after useradd", hostile.name);
	hostile.uid = pw->pw_uid;
	hostile.gid = pw->pw_gid;
	return &hostile;
}

struct h_proc h_spawn_as(const struct h_user *user, const char *const *argv, const char *const *env)
{
	struct h_proc p;

	spawn_user = user;
	p = h_spawn(argv, env);
	spawn_user = NULL;
	return p;
}

int h_output_as(const struct h_user *user, const char *const *argv, const char *const *env, char **out, char **err)
{
	struct h_proc p = h_spawn_as(user, argv, env);

	*out = h_read_all(&p, 10000);
	return h_finish(&p, err);
}

json_t *h_json_load(const char *path)
{
	json_error_t err;
	json_t *r = json_load_file(path, 0, &err);

	cr_assert_not_null(r, "no JSON report in %s: %s", path, err.text);
	return r;
}

long long h_jint(json_t *r, const char *key)
{
	json_t *v = json_object_get(r, key);

	cr_assert(json_is_integer(v), "%s is not an integer", key);
	return json_integer_value(v);
}

/* Whether key is the _hex twin of a string member (json-schema.md's rule). */
static bool hex_twin(const char *key)
{
	size_t n = strlen(key);

	return n > 4 && strcmp(key + n - 4, "_hex") == 0;
}

/* Every member of o (an object or an array), at any depth, as `member`. */
static void expect_members_documented(json_t *o, const char *section, const char *command)
{
	const char *key;
	json_t *v;
	size_t i;

	if (json_is_array(o)) {
		json_array_foreach(o, i, v)
			expect_members_documented(v, section, command);
		return;
	}
	json_object_foreach(o, key, v) {
		if (!hex_twin(key))
			cr_expect(strstr(section, h_str("`%s`", key)), "%s --json: %s is not in json-schema.md", command,
				  key);
		expect_members_documented(v, section, command);
	}
}

void h_expect_json_documented(json_t *doc, const char *command)
{
	const char *path = h_str("%s/json-schema.md", h_bin("SG_DOCS"));
	static char text[1 << 17];
	const char *key;
	char *section, *end;
	json_t *v, *e, *m;
	size_t i;
	FILE *f = fopen(path, "r");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	text[fread(text, 1, sizeof(text) - 1, f)] = '\0';
	fclose(f);
	section = strstr(text, h_str("\n## `shmguard %s --json`", command));
	cr_assert_not_null(section, "%s has no section for %s --json", path, command);
	if ((end = strstr(section + 1, "\n## ")))
		*end = '\0';
	json_object_foreach(doc, key, v) {
		cr_expect(strstr(section, h_str("`%s`", key)), "%s --json: %s is not in json-schema.md", command, key);
		if (!json_is_array(v)) {
			expect_members_documented(v, section, command);
			continue;
		}
		json_array_foreach(v, i, e) {
			const char *member;
			json_object_foreach(e, member, m) {
				if (!hex_twin(member))
					cr_expect(strstr(section, h_str("`%s[].%s`", key, member)),
						  "%s --json: %s[].%s is not in json-schema.md", command, key, member);
				expect_members_documented(m, section, command);
			}
		}
	}
}

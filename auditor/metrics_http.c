/* /metrics over HTTP with libmicrohttpd: its own thread parses requests and
 * talks to clients, so the auditor's event loop only ever swaps the
 * published text under a mutex.  A slow client (slowloris: a byte every few
 * seconds, which an idle timeout never ends) is bounded four ways: a few
 * connections per client address; a short deadline to send a request's
 * headers and a longer one for the whole request, which a watchdog thread
 * enforces by shutting the socket down; and a number of slots: a
 * connection beyond them ends the one that has waited longest without
 * sending a request, so clients that hold connections from any number of
 * addresses never keep out a scraper, which asks at once. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "metrics.h"

enum {
	CONNECTION_SLOTS = 64,
	/* MHD's own limit, above the slots: room for the connections ended
	 * for a newer one until MHD has closed them. */
	CONNECTION_LIMIT = 4 * CONNECTION_SLOTS,
	PER_ADDRESS_LIMIT = 8, /* a Prometheus server uses one or two */
	IDLE_TIMEOUT_S = 5,
	/* From the connection (or the previous answer on it) to a request's
	 * last header: a scraper sends its few lines at once. */
	HEADER_DEADLINE_S = 2,
	/* From the same moment to the end of the answer; a scrape of these
	 * few KiB takes milliseconds. */
	REQUEST_DEADLINE_S = 10,
	WATCHDOG_PERIOD_MS = 250,
};

/* A connection the watchdog follows, from MHD's STARTED notification to its
 * CLOSED one, which MHD makes before it closes the socket: under the lock,
 * fd is always still this connection's. */
struct watched {
	struct watched *next, **prev;
	int fd;
	bool waiting; /* for a request: nothing of one parsed since since_s */
	bool ended;   /* shut down for a newer connection: no longer in a slot */
	double since_s, deadline_s;
};

struct metrics_server {
	struct MHD_Daemon *daemon;
	pthread_mutex_t lock;
	char *text; /* what /metrics answers; NULL before the first publish */
	size_t len;
	unsigned port;
	char address[INET6_ADDRSTRLEN + 16]; /* as bound, for people */
	struct watched *watched; /* under lock, newest first */
	unsigned slots_used;     /* under lock: the watched connections not ended */
	pthread_t watchdog;
	pthread_cond_t stop_cond;
	bool stopping, watchdog_started;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Under s->lock: w waits for a request from now on. */
static void wait_for_request(struct watched *w)
{
	w->waiting = true;
	w->since_s = now_s();
	w->deadline_s = w->since_s + HEADER_DEADLINE_S;
}

/* Under s->lock: the slots are over-full, so the connection that has waited
 * longest without sending a request gives its slot up (MHD sees the end of
 * the stream and closes it).  None waits: every slot has a request under
 * way, each bounded by its deadline. */
static void end_longest_waiting(struct metrics_server *s)
{
	struct watched *oldest = NULL;

	for (struct watched *w = s->watched; w; w = w->next)
		if (w->waiting && !w->ended && (!oldest || w->since_s <= oldest->since_s))
			oldest = w;
	if (!oldest)
		return;
	shutdown(oldest->fd, SHUT_RDWR);
	oldest->ended = true;
	s->slots_used--;
}

static struct watched *watched_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return info ? info->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct metrics_server *s = cls;
	struct watched *w = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!info || !(w = calloc(1, sizeof(*w))))
			return; /* not watched: the idle timeout still applies */
		w->fd = info->connect_fd;
		pthread_mutex_lock(&s->lock);
		wait_for_request(w);
		if ((w->next = s->watched))
			w->next->prev = &w->next;
		w->prev = &s->watched;
		s->watched = w;
		if (++s->slots_used > CONNECTION_SLOTS)
			end_longest_waiting(s);
		pthread_mutex_unlock(&s->lock);
		*socket_context = w;
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED && w) {
		pthread_mutex_lock(&s->lock);
		if ((*w->prev = w->next))
			w->next->prev = w->prev;
		if (!w->ended)
			s->slots_used--;
		pthread_mutex_unlock(&s->lock);
		free(w);
		*socket_context = NULL;
	}
}

/* A request's headers are in: the whole request has until its deadline. */
static void request_begun(struct metrics_server *s, struct MHD_Connection *c)
{
	struct watched *w = watched_of(c);

	if (!w)
		return;
	pthread_mutex_lock(&s->lock);
	w->waiting = false;
	w->deadline_s = w->since_s + REQUEST_DEADLINE_S;
	pthread_mutex_unlock(&s->lock);
}

/* A request answered: the connection waits for the next one. */
static void on_completed(void *cls, struct MHD_Connection *c, void **state, enum MHD_RequestTerminationCode code)
{
	struct metrics_server *s = cls;
	struct watched *w = watched_of(c);

	(void)state;
	if (code != MHD_REQUEST_TERMINATED_COMPLETED_OK || !w)
		return;
	pthread_mutex_lock(&s->lock);
	wait_for_request(w);
	pthread_mutex_unlock(&s->lock);
}

static void *watchdog(void *arg)
{
	struct metrics_server *s = arg;

	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		struct timespec until;
		double now = now_s();

		for (struct watched *w = s->watched; w; w = w->next) {
			if (w->deadline_s > now)
				continue;
			/* MHD sees the end of the stream and closes it. */
			shutdown(w->fd, SHUT_RDWR);
			w->deadline_s = now + REQUEST_DEADLINE_S;
			if (!w->ended) {
				w->ended = true;
				s->slots_used--;
			}
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += WATCHDOG_PERIOD_MS * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&s->stop_cond, &s->lock, &until);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, const char *type, char *body,
			      size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **state)
{
	struct metrics_server *s = cls;
	char *copy = NULL;
	size_t len = 0;

	(void)version;
	(void)upload;
	/* A request body is never wanted: refuse it rather than buffer it. */
	if (*upload_size)
		return MHD_NO;
	if (!*state) { /* first call for this request: headers only */
		*state = s;
		request_begun(s, c);
		return MHD_YES;
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return answer(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "GET /metrics only\n", 18,
			      MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics") != 0)
		return answer(c, MHD_HTTP_NOT_FOUND, "text/plain", "not found: try /metrics\n", 24,
			      MHD_RESPMEM_PERSISTENT);
	pthread_mutex_lock(&s->lock);
	if (s->text && (copy = malloc(s->len)))
		memcpy(copy, s->text, len = s->len);
	pthread_mutex_unlock(&s->lock);
	if (!copy)
		return answer(c, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain", "no figures yet\n", 15,
			      MHD_RESPMEM_PERSISTENT);
	return answer(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", copy, len, MHD_RESPMEM_MUST_FREE);
}

/* "HOST:PORT", "[V6]:PORT" or ":PORT" into a socket address; a HOST that
 * is a name is resolved (its first address). */
static int parse_addr(const char *addr, struct sockaddr_storage *ss, char *err, size_t errlen)
{
	const char *colon = strrchr(addr, ':');
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG}, *res = NULL;
	char host[256], *end;
	unsigned long port;
	int rc;

	memset(ss, 0, sizeof(*ss));
	if (!colon)
		goto bad;
	port = strtoul(colon + 1, &end, 10);
	if (colon[1] < '0' || colon[1] > '9' || *end || port > 65535)
		goto bad;
	if ((size_t)(colon - addr) >= sizeof(host))
		goto bad;
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	if (host[0] == '[') {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
		size_t n = strlen(host);

		if (n < 2 || host[n - 1] != ']')
			goto bad;
		host[n - 1] = '\0';
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host + 1, &in6->sin6_addr) != 1)
			goto bad;
		return 0;
	}
	if (host[0] == '\0') {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		in->sin_addr.s_addr = htonl(INADDR_ANY);
		return 0;
	}
	if (strchr(host, ':'))
		goto bad; /* an IPv6 address wants brackets */
	if ((rc = getaddrinfo(host, NULL, &hints, &res)) != 0 || !res) {
		snprintf(err, errlen, "bad listen address '%s': cannot resolve '%s': %s", addr, host,
			 rc ? gai_strerror(rc) : "no address");
		return -1;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
	return 0;
bad:
	snprintf(err, errlen, "bad listen address '%s': want HOST:PORT, [IPV6]:PORT or :PORT", addr);
	return -1;
}

/* "HOST:PORT" of the address bound, with the port it got. */
static void address_text(const struct sockaddr_storage *ss, unsigned port, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, port);
	} else {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, port);
	}
}

struct metrics_server *metrics_serve(const char *addr, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	struct metrics_server *s;
	const union MHD_DaemonInfo *info;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;

	if (parse_addr(addr, &ss, err, errlen) < 0)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	pthread_cond_init(&s->stop_cond, NULL);
	if (pthread_create(&s->watchdog, NULL, watchdog, s) != 0) {
		snprintf(err, errlen, "cannot start a thread: %s", strerror(errno));
		goto fail;
	}
	s->watchdog_started = true;
	s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, &ss,
				     MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNECTION_LIMIT,
				     MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)PER_ADDRESS_LIMIT,
				     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
				     MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
				     MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768, MHD_OPTION_END);
	if (!s->daemon) {
		snprintf(err, errlen, "cannot listen on %s (in use, or not an address of this machine?)", addr);
		goto fail;
	}
	info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : 0;
	address_text(&ss, s->port, s->address, sizeof(s->address));
	return s;
fail:
	s->daemon = NULL;
	metrics_stop(s);
	return NULL;
}

unsigned metrics_port(const struct metrics_server *s)
{
	return s->port;
}

const char *metrics_address(const struct metrics_server *s)
{
	return s->address;
}

void metrics_publish(struct metrics_server *s, const char *text, size_t len)
{
	char *copy = malloc(len ? len : 1);

	if (!copy)
		return; /* the clients keep the previous figures */
	memcpy(copy, text, len);
	pthread_mutex_lock(&s->lock);
	free(s->text);
	s->text = copy;
	s->len = len;
	pthread_mutex_unlock(&s->lock);
}

void metrics_stop(struct metrics_server *s)
{
	if (!s)
		return;
	if (s->daemon)
		MHD_stop_daemon(s->daemon);
	if (s->watchdog_started) {
		pthread_mutex_lock(&s->lock);
		s->stopping = true;
		pthread_cond_signal(&s->stop_cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->watchdog, NULL);
	}
	pthread_cond_destroy(&s->stop_cond);
	pthread_mutex_destroy(&s->lock);
	free(s->text);
	free(s);
}

/* /metrics over HTTP with libmicrohttpd: its own thread parses requests and
 * talks to clients, under a connection limit and timeout, so the auditor's
 * event loop only ever swaps the published text under a mutex. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "metrics.h"

enum { CONNECTION_LIMIT = 32, CONNECTION_TIMEOUT_S = 5 };

struct metrics_server {
	struct MHD_Daemon *daemon;
	pthread_mutex_t lock;
	char *text; /* what /metrics answers; NULL before the first publish */
	size_t len;
	unsigned port;
};

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

/* "HOST:PORT", "[V6]:PORT" or ":PORT" into a socket address. */
static int parse_addr(const char *addr, struct sockaddr_storage *ss, char *err, size_t errlen)
{
	const char *colon = strrchr(addr, ':');
	char host[64], *end;
	unsigned long port;

	memset(ss, 0, sizeof(*ss));
	if (!colon)
		goto bad;
	port = strtoul(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end || port > 65535)
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
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	in->sin_family = AF_INET;
	in->sin_port = htons((uint16_t)port);
	if (host[0] == '\0')
		in->sin_addr.s_addr = htonl(INADDR_ANY);
	else if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
		goto bad;
	return 0;
bad:
	snprintf(err, errlen, "bad listen address '%s': want HOST:PORT, [IPV6]:PORT or :PORT with a numeric host", addr);
	return -1;
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
	s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, &ss,
				     MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNECTION_LIMIT,
				     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S,
				     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768, MHD_OPTION_END);
	if (!s->daemon) {
		snprintf(err, errlen, "cannot listen on %s (in use, or not an address of this machine?)", addr);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return NULL;
	}
	info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : 0;
	return s;
}

unsigned metrics_port(const struct metrics_server *s)
{
	return s->port;
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
	MHD_stop_daemon(s->daemon);
	pthread_mutex_destroy(&s->lock);
	free(s->text);
	free(s);
}

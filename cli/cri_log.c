#include "cri_log.h"

#include <string.h>

void cri_log_init(struct cri_log *c, size_t max)
{
	*c = (struct cri_log){.max = max};
}

void cri_log_free(struct cri_log *c)
{
	for (int i = 0; i < LOG_STREAMS; i++)
		log_join_free(&c->part[i]);
}

/* The next field up to a space: its length, or 0 when there is no space
 * after it (every field of the prefix is followed by one). */
static size_t field(const char *s, size_t len)
{
	const char *sp = memchr(s, ' ', len);

	return sp ? (size_t)(sp - s) : 0;
}

static bool is(const char *s, size_t len, const char *word)
{
	return len == strlen(word) && memcmp(s, word, len) == 0;
}

/* The timestamp as runtimes write it (RFC 3339): digits first, then digits,
 * '-', ':', '.', 'T', 'Z', '+'. */
static bool timestamp_ok(const char *s, size_t len)
{
	if (len < 10 || s[0] < '0' || s[0] > '9')
		return false;
	for (size_t i = 0; i < len; i++)
		if (!s[i] || !strchr("0123456789-:.TZ+", s[i]))
			return false;
	return true;
}

int cri_log_line(struct cri_log *c, const char *s, size_t len, cri_line_fn *line, void *ctx)
{
	size_t ts = field(s, len), st, tg, taglen, text_len;
	enum log_stream stream;
	const char *text;
	bool full;
	int n;

	if (!ts || !timestamp_ok(s, ts))
		goto malformed;
	s += ts + 1, len -= ts + 1;
	st = field(s, len);
	if (is(s, st, "stdout"))
		stream = LOG_STDOUT;
	else if (is(s, st, "stderr"))
		stream = LOG_STDERR;
	else
		goto malformed;
	s += st + 1, len -= st + 1;
	/* The tag ends at the space before LINE; its first part is P or F. */
	tg = field(s, len);
	if (!tg && len && (s[0] == 'F' || s[0] == 'P') && (len == 1 || s[1] == ':'))
		tg = len; /* an empty LINE, its space dropped */
	taglen = memchr(s, ':', tg) ? (size_t)((const char *)memchr(s, ':', tg) - s) : tg;
	if (is(s, taglen, "F"))
		full = true;
	else if (is(s, taglen, "P"))
		full = false;
	else
		goto malformed;
	s += tg, len -= tg;
	if (len)
		s++, len--;

	n = log_join_add(&c->part[stream], c->max, s, len, full, &text, &text_len, &c->overlong);
	if (n == 1)
		line(text, text_len, stream, ctx);
	return n < 0 ? -1 : 0;
malformed:
	c->malformed++;
	return 0;
}

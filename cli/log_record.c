#include "log_record.h"

#include <stdlib.h>
#include <string.h>

int log_join_add(struct log_join *j, size_t max, const char *s, size_t len, bool last, const char **text,
		 size_t *text_len, unsigned long long *overlong)
{
	/* A whole text in one piece, as most are. */
	if (last && !j->len && !j->overlong) {
		*text = s;
		*text_len = len;
		return 1;
	}
	if (!j->overlong && len > max - j->len) {
		(*overlong)++;
		j->overlong = true;
	}
	if (!j->overlong && !j->buf && !(j->buf = malloc(max))) {
		(*overlong)++;
		j->overlong = true;
		if (last)
			j->len = 0, j->overlong = false;
		return -1;
	}
	if (!j->overlong) {
		memcpy(j->buf + j->len, s, len);
		j->len += len;
	}
	if (!last)
		return 0;
	*text = j->buf;
	*text_len = j->len;
	j->len = 0;
	if (j->overlong) {
		j->overlong = false;
		return 0;
	}
	return 1;
}

void log_join_free(struct log_join *j)
{
	free(j->buf);
	*j = (struct log_join){0};
}

void log_records_init(struct log_records *r, size_t max, bool join_cr)
{
	*r = (struct log_records){.max = max, .join_cr = join_cr};
}

void log_records_free(struct log_records *r)
{
	for (int i = 0; i < LOG_STREAMS; i++)
		log_join_free(&r->stream[i]);
}

int log_records_line(struct log_records *r, enum log_stream st, const char *line, size_t len, log_line_fn *fn,
		     void *ctx)
{
	bool cr = len && line[len - 1] == '\r';
	const char *text;
	size_t text_len;
	int n;

	if (!r->join_cr) {
		fn(line, len - cr, ctx);
		return 0;
	}
	n = log_join_add(&r->stream[st], r->max, line, len, !cr, &text, &text_len, &r->overlong);
	/* The newline the line ended in, between it and the next. */
	if (n == 0 && cr)
		n = log_join_add(&r->stream[st], r->max, "\n", 1, false, &text, &text_len, &r->overlong);
	if (n == 1)
		fn(text, text_len, ctx);
	return n < 0 ? -1 : 0;
}

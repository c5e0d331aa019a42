#include "core.h"
#include "pattern.h"

#include <stdbool.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>

static const struct {
	const char *text;
	enum sg_token_kind kind;
} placeholders[] = {
	{"{req}", SG_TOK_REQ},
	{"{int}", SG_TOK_INT},
	{"{any}", SG_TOK_ANY},
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Whether {int} token k of p can only be a whole run of digits: the token
 * on its side away from {req} is a literal whose byte next to it is no
 * digit (a shorter run would leave a digit there). */
static bool int_is_whole_run(const struct sg_pattern *p, unsigned k)
{
	const struct sg_token *t;

	if (k < p->req_index) {
		t = &p->tokens[k + 1];
		return k + 1 != p->req_index && t->kind == SG_TOK_LITERAL && !is_digit(p->text[t->off]);
	}
	t = &p->tokens[k - 1];
	return k - 1 != p->req_index && t->kind == SG_TOK_LITERAL && !is_digit(p->text[t->off + t->len - 1]);
}

static bool splits_one_way(const struct sg_pattern *p)
{
	for (unsigned k = 0; k < p->ntokens; k++)
		if (p->tokens[k].kind == SG_TOK_ANY || (p->tokens[k].kind == SG_TOK_INT && !int_is_whole_run(p, k)))
			return false;
	return true;
}

static int parse_one(struct sg_pattern *p, const char *text, size_t len, char *err, size_t errlen)
{
	unsigned nreq = 0;

	if (len == 0) {
		snprintf(err, errlen, "empty pattern (two ';' in a row, or a leading/trailing ';')");
		return -EINVAL;
	}
	if (len > SG_NAME_MAX) {
		snprintf(err, errlen, "pattern '%.40s...' is longer than %d bytes", text, SG_NAME_MAX);
		return -EINVAL;
	}
	memcpy(p->text, text, len);
	p->text[len] = '\0';
	p->ntokens = 0;

	for (size_t i = 0; i < len;) {
		struct sg_token tok = {.kind = SG_TOK_LITERAL, .off = i, .len = 0};

		if (p->text[i] == '{') {
			size_t k;
			for (k = 0; k < sizeof(placeholders) / sizeof(placeholders[0]); k++) {
				size_t n = strlen(placeholders[k].text);
				if (len - i >= n && memcmp(p->text + i, placeholders[k].text, n) == 0)
					break;
			}
			if (k == sizeof(placeholders) / sizeof(placeholders[0])) {
				snprintf(err, errlen, "pattern '%s': unknown placeholder at '%.16s' (known: {req} {int} {any})",
					 p->text, p->text + i);
				return -EINVAL;
			}
			tok.kind = placeholders[k].kind;
			tok.len = strlen(placeholders[k].text);
		} else {
			while (i + tok.len < len && p->text[i + tok.len] != '{')
				tok.len++;
			if (memchr(p->text + i, '}', tok.len)) {
				snprintf(err, errlen, "pattern '%s': stray '}'", p->text);
				return -EINVAL;
			}
		}
		if (p->ntokens == SG_MAX_PATTERN_TOKENS) {
			snprintf(err, errlen, "pattern '%s' has more than %d parts", p->text, SG_MAX_PATTERN_TOKENS);
			return -EINVAL;
		}
		if (tok.kind == SG_TOK_REQ) {
			nreq++;
			p->req_index = p->ntokens;
		}
		p->tokens[p->ntokens++] = tok;
		i += tok.len;
	}
	if (nreq != 1) {
		snprintf(err, errlen, "pattern '%s' must contain {req} exactly once (found %u)", p->text, nreq);
		return -EINVAL;
	}
	p->min_len = 0;
	for (unsigned k = 0; k < p->ntokens; k++)
		p->min_len += p->tokens[k].kind == SG_TOK_LITERAL ? p->tokens[k].len : 1;
	p->direct = splits_one_way(p);
	return 0;
}

int sg_patterns_parse(struct sg_pattern_set *set, const char *spec, char *err, size_t errlen)
{
	set->count = 0;
	for (const char *start = spec;;) {
		const char *end = strchr(start, ';');
		size_t len = end ? (size_t)(end - start) : strlen(start);

		if (set->count == SG_MAX_PATTERNS) {
			snprintf(err, errlen, "more than %d patterns", SG_MAX_PATTERNS);
			return -EINVAL;
		}
		if (parse_one(&set->patterns[set->count], start, len, err, errlen) < 0)
			return -EINVAL;
		set->count++;
		if (!end)
			return 0;
		start = end + 1;
	}
}

/* A set of positions in a name, 0..len inclusive (a name is at most
 * SG_NAME_MAX bytes).  Members lie in [lo, hi); at[] outside that range is
 * stale, so a step clears and visits only the positions it can reach. */
struct posset {
	bool at[SG_NAME_MAX + 1];
	size_t lo, hi;
};

static void posset_only(struct posset *s, size_t pos)
{
	s->at[pos] = true;
	s->lo = pos;
	s->hi = pos + 1;
}

/* Empties s, ready to take members in [lo, hi) (none when lo >= hi). */
static void posset_clear(struct posset *s, size_t lo, size_t hi)
{
	if (lo >= hi)
		lo = hi = 0;
	memset(s->at + lo, 0, hi - lo);
	/* Inverted, so that the first posset_add() sets both ends. */
	s->lo = hi;
	s->hi = lo;
}

static void posset_add(struct posset *s, size_t pos)
{
	s->at[pos] = true;
	if (pos < s->lo)
		s->lo = pos;
	if (pos + 1 > s->hi)
		s->hi = pos + 1;
}

static bool is_run_char(enum sg_token_kind kind, char c)
{
	return kind == SG_TOK_INT ? is_digit(c) : c != '/';
}

/* One token, read left to right: from every position in in, where can it end? */
static void step_forward(const struct sg_pattern *p, const struct sg_token *t, const char *name, size_t len,
			 const struct posset *in, struct posset *out)
{
	if (in->lo >= in->hi) {
		posset_clear(out, 0, 0);
		return;
	}
	posset_clear(out, in->lo + (t->kind == SG_TOK_LITERAL ? t->len : 1), len + 1);
	for (size_t pos = in->lo; pos < in->hi; pos++) {
		if (!in->at[pos])
			continue;
		if (t->kind == SG_TOK_LITERAL) {
			if (len - pos >= t->len && memcmp(name + pos, p->text + t->off, t->len) == 0)
				posset_add(out, pos + t->len);
			continue;
		}
		for (size_t end = pos; end < len && is_run_char(t->kind, name[end]); end++)
			posset_add(out, end + 1);
	}
}

/* One token, read right to left: from every position in in, where can it start? */
static void step_backward(const struct sg_pattern *p, const struct sg_token *t, const char *name,
			  const struct posset *in, struct posset *out)
{
	size_t reach = t->kind == SG_TOK_LITERAL ? t->len : 1;

	if (in->lo >= in->hi || in->hi - 1 < reach) {
		posset_clear(out, 0, 0);
		return;
	}
	posset_clear(out, 0, in->hi - reach);
	for (size_t pos = in->lo; pos < in->hi; pos++) {
		if (!in->at[pos])
			continue;
		if (t->kind == SG_TOK_LITERAL) {
			if (pos >= t->len && memcmp(name + pos - t->len, p->text + t->off, t->len) == 0)
				posset_add(out, pos - t->len);
			continue;
		}
		for (size_t start = pos; start > 0 && is_run_char(t->kind, name[start - 1]); start--)
			posset_add(out, start - 1);
	}
}

/* Whether the ends of name can be those of p: a literal first or last
 * token is there, an {int} there is a digit, and name is long enough.
 * Exact (a whole match needs all of it), and it spares most names the
 * extraction by a pattern they cannot match. */
static bool ends_fit(const struct sg_pattern *p, const char *name, size_t len)
{
	const struct sg_token *first = &p->tokens[0], *last = &p->tokens[p->ntokens - 1];

	if (len < p->min_len)
		return false;
	if (first->kind == SG_TOK_LITERAL ? memcmp(name, p->text + first->off, first->len) != 0
					   : first->kind == SG_TOK_INT && !is_run_char(SG_TOK_INT, name[0]))
		return false;
	if (last->kind == SG_TOK_LITERAL)
		return memcmp(name + len - last->len, p->text + last->off, last->len) == 0;
	return last->kind != SG_TOK_INT || is_run_char(SG_TOK_INT, name[len - 1]);
}

/* extract() for a pattern that splits a name one way at most (p->direct):
 * the tokens before {req} read forward from the start, those after it
 * backward from the end, each {int} a whole run of digits. */
static bool extract_direct(const struct sg_pattern *p, const char *name, size_t len,
			   bool (*found)(const char *req, size_t rlen, void *ctx), void *ctx)
{
	size_t i = 0, j = len;

	for (unsigned k = 0; k < p->req_index; k++) {
		const struct sg_token *t = &p->tokens[k];
		size_t start = i;

		if (t->kind == SG_TOK_LITERAL) {
			if (len - i < t->len || memcmp(name + i, p->text + t->off, t->len) != 0)
				return true;
			i += t->len;
			continue;
		}
		while (i < len && is_digit(name[i]))
			i++;
		if (i == start)
			return true;
	}
	for (unsigned k = p->ntokens; k-- > p->req_index + 1;) {
		const struct sg_token *t = &p->tokens[k];
		size_t end = j;

		if (t->kind == SG_TOK_LITERAL) {
			if (j < t->len || memcmp(name + j - t->len, p->text + t->off, t->len) != 0)
				return true;
			j -= t->len;
			continue;
		}
		while (j > 0 && is_digit(name[j - 1]))
			j--;
		if (j == end)
			return true;
	}
	/* {req}: one or more characters other than '/'. */
	if (i >= j || memchr(name + i, '/', j - i))
		return true;
	return found(name + i, j - i, ctx);
}

/* Every request ID that pattern p can extract from name, reported through
 * found(); returns false as soon as found() asks to stop. */
static bool extract(const struct sg_pattern *p, const char *name, size_t len,
		    bool (*found)(const char *req, size_t rlen, void *ctx), void *ctx)
{
	struct posset sets[3], *before = &sets[0], *after = &sets[1], *spare = &sets[2], *swap;

	posset_only(before, 0);
	for (unsigned k = 0; k < p->req_index; k++) {
		step_forward(p, &p->tokens[k], name, len, before, spare);
		swap = before, before = spare, spare = swap;
	}
	posset_only(after, len);
	for (unsigned k = p->ntokens; k-- > p->req_index + 1;) {
		step_backward(p, &p->tokens[k], name, after, spare);
		swap = after, after = spare, spare = swap;
	}
	/* {req}: one or more characters other than '/' between the two, so it
	 * ends at a member j of after with i < j, before the first '/' from i. */
	if (after->lo >= after->hi)
		return true;
	for (size_t i = before->lo; i < before->hi && i + 1 < after->hi; i++) {
		const char *slash;
		size_t stop = after->hi;

		if (!before->at[i])
			continue;
		if ((slash = memchr(name + i, '/', after->hi - 1 - i)))
			stop = (size_t)(slash - name) + 1;
		for (size_t j = i + 1 > after->lo ? i + 1 : after->lo; j < stop; j++)
			if (after->at[j] && !found(name + i, j - i, ctx))
				return false;
	}
	return true;
}

struct match_ctx {
	const char *name;
	char *req, *other;
	size_t req_at, req_len;
	bool have_req, ambiguous;
};

static bool on_found(const char *r, size_t rlen, void *opaque)
{
	struct match_ctx *m = opaque;

	if (!m->have_req) {
		memcpy(m->req, r, rlen);
		m->req[rlen] = '\0';
		m->req_at = (size_t)(r - m->name);
		m->req_len = rlen;
		m->have_req = true;
		return true;
	}
	if (rlen == m->req_len && memcmp(r, m->req, rlen) == 0)
		return true;
	if (m->other) {
		memcpy(m->other, r, rlen);
		m->other[rlen] = '\0';
	}
	m->ambiguous = true;
	return false;
}

enum sg_match_result sg_patterns_match(const struct sg_pattern_set *set, const char *name, size_t len,
				       char *req, char *other, struct sg_match_at *at)
{
	struct match_ctx m = {.name = name, .req = req, .other = other};

	if (at)
		at->shape = -1;
	/* No file name holds a NUL byte: nothing that does is a name. */
	if (len == 0 || len > SG_NAME_MAX || memchr(name, '\0', len))
		return SG_MATCH_NONE;
	for (unsigned k = 0; k < set->count; k++) {
		bool had = m.have_req;

		if (!ends_fit(&set->patterns[k], name, len))
			continue;
		if (!(set->patterns[k].direct ? extract_direct : extract)(&set->patterns[k], name, len, on_found, &m))
			return SG_MATCH_AMBIGUOUS;
		if (!had && m.have_req && at)
			*at = (struct sg_match_at){(int)k, m.req_at, m.req_len};
	}
	return m.have_req ? SG_MATCH_ONE : SG_MATCH_NONE;
}

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

/* Whether the byte c can stand where token t meets an end of the name;
 * lit: a literal's byte there. */
static bool end_can_be(const struct sg_token *t, char lit, unsigned c)
{
	switch (t->kind) {
	case SG_TOK_LITERAL:
		return c == (unsigned char)lit;
	case SG_TOK_INT:
		return is_digit((char)c);
	default:
		return c != '/';
	}
}

/* Marks in set the bytes that a name pattern k matches can begin and end with. */
static void mark_ends(struct sg_pattern_set *set, unsigned k)
{
	const struct sg_pattern *p = &set->patterns[k];
	const struct sg_token *first = &p->tokens[0], *last = &p->tokens[p->ntokens - 1];

	for (unsigned c = 0; c < 256; c++) {
		if (end_can_be(first, p->text[first->off], c))
			set->first[c] |= 1u << k;
		if (end_can_be(last, p->text[last->off + last->len - 1], c))
			set->last[c] |= 1u << k;
	}
}

/* Token t, next in the scan of p: an {int} waits in step for the literal
 * after it, which makes the step. */
static void add_step(struct sg_pattern *p, struct sg_step *step, const struct sg_token *t)
{
	if (t->kind == SG_TOK_INT) {
		step->digits = true;
		return;
	}
	_Static_assert(SG_NAME_MAX - 5 <= 255, "a literal, the pattern less its {req}, fits in len");
	step->len = (unsigned char)t->len;
	step->off = t->off;
	p->steps[p->nsteps++] = *step;
	*step = (struct sg_step){0};
}

/* The scan of a direct pattern, whose every {int} has a literal after it
 * in the order of the scan (splits_one_way()). */
static void compile_steps(struct sg_pattern *p)
{
	struct sg_step step = {0};

	p->nsteps = 0;
	for (unsigned k = 0; k < p->req_index; k++)
		add_step(p, &step, &p->tokens[k]);
	p->nforward = p->nsteps;
	for (unsigned k = p->ntokens; k-- > p->req_index + 1;)
		add_step(p, &step, &p->tokens[k]);
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
	if (p->direct)
		compile_steps(p);
	return 0;
}

int sg_patterns_parse(struct sg_pattern_set *set, const char *spec, char *err, size_t errlen)
{
	_Static_assert(SG_MAX_PATTERNS <= 32, "a bit per pattern in first[] and last[]");
	set->count = 0;
	memset(set->first, 0, sizeof(set->first));
	memset(set->last, 0, sizeof(set->last));
	for (const char *start = spec;;) {
		const char *end = strchr(start, ';');
		size_t len = end ? (size_t)(end - start) : strlen(start);

		if (set->count == SG_MAX_PATTERNS) {
			snprintf(err, errlen, "more than %d patterns", SG_MAX_PATTERNS);
			return -EINVAL;
		}
		if (parse_one(&set->patterns[set->count], start, len, err, errlen) < 0)
			return -EINVAL;
		mark_ends(set, set->count++);
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

/* Whether the n bytes at a and b are the same: memcmp without a call, in
 * a load or two for the short literals that patterns are made of. */
static inline bool same_bytes(const char *a, const char *b, size_t n)
{
	uint64_t x, y;
	uint32_t v, w;
	uint16_t s, t;

	if (n == 1)
		return *a == *b;
	if (n >= 8) {
		for (; n > 8; a += 8, b += 8, n -= 8) {
			memcpy(&x, a, 8), memcpy(&y, b, 8);
			if (x != y)
				return false;
		}
		/* The last 8 bytes, which may overlap those compared. */
		memcpy(&x, a + n - 8, 8), memcpy(&y, b + n - 8, 8);
		return x == y;
	}
	if (n >= 4) {
		memcpy(&v, a, 4), memcpy(&w, b, 4);
		if (v != w)
			return false;
		memcpy(&v, a + n - 4, 4), memcpy(&w, b + n - 4, 4);
		return v == w;
	}
	if (n >= 2) {
		memcpy(&s, a, 2), memcpy(&t, b, 2);
		if (s != t)
			return false;
		memcpy(&s, a + n - 2, 2), memcpy(&t, b + n - 2, 2);
		return s == t;
	}
	return n == 0;
}

/* Whether a literal first or last token of p is at that end of name (at
 * least p->min_len bytes long): the position sets need not be built for a
 * name that p cannot match. */
static bool ends_fit(const struct sg_pattern *p, const char *name, size_t len)
{
	const struct sg_token *first = &p->tokens[0], *last = &p->tokens[p->ntokens - 1];

	return (first->kind != SG_TOK_LITERAL || same_bytes(name, p->text + first->off, first->len)) &&
	       (last->kind != SG_TOK_LITERAL || same_bytes(name + len - last->len, p->text + last->off, last->len));
}

/* What the patterns gave a name so far. */
struct match_ctx {
	const char *name;
	int shape;              /* the pattern that gave the first request; -1: none yet */
	size_t req_at, req_len; /* where that request stands */
	size_t other_at, other_len;
	bool ambiguous; /* a different request at other_at */
};

/* Pattern k gives the request of rlen bytes at at in the name.  False: the
 * name is ambiguous, and the search stops. */
static bool found(struct match_ctx *m, unsigned k, size_t at, size_t rlen)
{
	if (m->shape < 0) {
		m->shape = (int)k;
		m->req_at = at;
		m->req_len = rlen;
		return true;
	}
	if (rlen == m->req_len && same_bytes(m->name + at, m->name + m->req_at, rlen))
		return true;
	m->other_at = at;
	m->other_len = rlen;
	m->ambiguous = true;
	return false;
}

/* The one way a pattern with p->direct can split name, by its steps:
 * each {int} a whole run of digits.  False: p does not match name.
 * component: name is known to hold no '/'. */
static bool split_direct(const struct sg_pattern *p, const char *name, size_t len, bool component, size_t *req_at,
			 size_t *req_len)
{
	const struct sg_step *s = p->steps, *forward_end = s + p->nforward, *end = s + p->nsteps;
	size_t i = 0, j = len;

	for (; s < forward_end; s++) {
		if (s->digits) {
			size_t start = i;

			while (i < len && is_digit(name[i]))
				i++;
			if (i == start)
				return false;
		}
		if (len - i < s->len || !same_bytes(name + i, p->text + s->off, s->len))
			return false;
		i += s->len;
	}
	for (; s < end; s++) {
		if (s->digits) {
			size_t stop = j;

			while (j > 0 && is_digit(name[j - 1]))
				j--;
			if (j == stop)
				return false;
		}
		if (j < s->len || !same_bytes(name + j - s->len, p->text + s->off, s->len))
			return false;
		j -= s->len;
	}
	/* {req}: one or more characters other than '/'. */
	if (i >= j || (!component && memchr(name + i, '/', j - i)))
		return false;
	*req_at = i;
	*req_len = j - i;
	return true;
}

/* Every request ID that pattern k, p, can extract from name, given to
 * found(); false as soon as found() finds the name ambiguous. */
static bool extract(const struct sg_pattern *p, unsigned k, const char *name, size_t len, struct match_ctx *m)
{
	struct posset sets[3], *before = &sets[0], *after = &sets[1], *spare = &sets[2], *swap;

	posset_only(before, 0);
	for (unsigned t = 0; t < p->req_index; t++) {
		step_forward(p, &p->tokens[t], name, len, before, spare);
		swap = before, before = spare, spare = swap;
	}
	posset_only(after, len);
	for (unsigned t = p->ntokens; t-- > p->req_index + 1;) {
		step_backward(p, &p->tokens[t], name, after, spare);
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
			if (after->at[j] && !found(m, k, i, j - i))
				return false;
	}
	return true;
}

static void copy_out(char *to, const char *from, size_t len)
{
	if (to) {
		memcpy(to, from, len);
		to[len] = '\0';
	}
}

/* match() for the patterns whose bits are set in fit (those that name's
 * end bytes fit).  Apart, so that a name refused by every pattern costs a
 * few loads and no more. */
static __attribute__((noinline)) enum sg_match_result match_from(const struct sg_pattern_set *set, uint32_t fit,
								 const char *name, size_t len, bool component,
								 char *req, char *other, struct sg_match_at *at)
{
	struct match_ctx m = {.name = name, .shape = -1};

	for (; fit; fit &= fit - 1) {
		unsigned k = (unsigned)__builtin_ctz(fit);
		const struct sg_pattern *p = &set->patterns[k];
		size_t i, n;

		if (len < p->min_len)
			continue;
		if (p->direct ? split_direct(p, name, len, component, &i, &n) && !found(&m, k, i, n)
			      : ends_fit(p, name, len) && !extract(p, k, name, len, &m))
			break;
	}
	if (m.shape < 0)
		return SG_MATCH_NONE;
	copy_out(req, name + m.req_at, m.req_len);
	if (m.ambiguous) {
		copy_out(other, name + m.other_at, m.other_len);
		return SG_MATCH_AMBIGUOUS;
	}
	if (at)
		*at = (struct sg_match_at){m.shape, m.req_at, m.req_len};
	return SG_MATCH_ONE;
}

/* sg_patterns_match(); component: name is known to hold no NUL byte and
 * no '/'. */
static inline enum sg_match_result match(const struct sg_pattern_set *set, const char *name, size_t len,
					 bool component, char *req, char *other, struct sg_match_at *at)
{
	uint32_t fit;

	if (at)
		at->shape = -1;
	/* No file name holds a NUL byte: nothing that does is a name. */
	if (len == 0 || len > SG_NAME_MAX || (!component && memchr(name, '\0', len)))
		return SG_MATCH_NONE;
	fit = set->first[(unsigned char)name[0]] & set->last[(unsigned char)name[len - 1]];
	if (set->count < 32)
		fit &= (1u << set->count) - 1;
	return fit ? match_from(set, fit, name, len, component, req, other, at) : SG_MATCH_NONE;
}

enum sg_match_result sg_patterns_match(const struct sg_pattern_set *set, const char *name, size_t len,
				       char *req, char *other, struct sg_match_at *at)
{
	return match(set, name, len, false, req, other, at);
}

enum sg_match_result sg_patterns_match_component(const struct sg_pattern_set *set, const char *name, size_t len,
						 char *req, char *other, struct sg_match_at *at)
{
	return match(set, name, len, true, req, other, at);
}

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "pattern.h"

static struct sg_pattern_set set;
static char req[SG_NAME_MAX + 1], other[SG_NAME_MAX + 1];

static void parse_ok(const char *spec)
{
	char err[200] = "";
	cr_assert_eq(sg_patterns_parse(&set, spec, err, sizeof(err)), 0, "parse '%s': %s", spec, err);
}

static enum sg_match_result match(const char *name)
{
	return sg_patterns_match(&set, name, strlen(name), req, other, NULL);
}

static void expect_one(const char *name, const char *want)
{
	cr_assert_eq(match(name), SG_MATCH_ONE, "'%s' should match exactly one request", name);
	cr_assert_str_eq(req, want, "'%s'", name);
}

Test(pattern, chunk_keys_and_lock_files)
{
	parse_ok("{req}_{int}_{int};shm_{req}_{int}_{int}_lockfile.lock");
	expect_one("chatcmpl-42_0_3", "chatcmpl-42");
	expect_one("shm_chatcmpl-42_0_3_lockfile.lock", "chatcmpl-42");
	expect_one("abc_def_0_0", "abc_def");
	cr_assert_eq(match("abc_0"), SG_MATCH_NONE);
	cr_assert_eq(match("abc_0_x"), SG_MATCH_NONE);
	cr_assert_eq(match("_0_0"), SG_MATCH_NONE, "{req} is one or more characters");
}

/* The seeds' collisions: a prefix or suffix never decides ownership. */
Test(pattern, seed_collisions_resolve_exactly)
{
	parse_ok("{req}_{int}_{int}");
	expect_one("abc_def_0_0", "abc_def"); /* abc must not own it */
	expect_one("other-req_0_0", "other-req"); /* "0" must not own it */
	expect_one("0_0_0", "0");
}

Test(pattern, two_shapes_naming_two_requests_are_ambiguous)
{
	parse_ok("{req}_{int}_{int};{req}_{int}_{int}_{int}_{int}");
	cr_assert_eq(match("abc_1_2_0_0"), SG_MATCH_AMBIGUOUS);
	cr_assert(strcmp(req, "abc_1_2") == 0 || strcmp(req, "abc") == 0);
	cr_assert(strcmp(other, "abc_1_2") == 0 || strcmp(other, "abc") == 0);
	cr_assert_str_neq(req, other);
	expect_one("abc_1_2", "abc"); /* only the three-part shape fits */
}

Test(pattern, one_pattern_with_two_readings_is_ambiguous)
{
	parse_ok("{req}_{any}");
	cr_assert_eq(match("a_b_c"), SG_MATCH_AMBIGUOUS);
	expect_one("a_b", "a");
}

Test(pattern, agreeing_patterns_are_not_ambiguous)
{
	struct sg_match_at at;
	parse_ok("kv_{req};kv_{req}");
	cr_assert_eq(sg_patterns_match(&set, "kv_x", 4, req, other, &at), SG_MATCH_ONE);
	cr_assert_eq(at.shape, 0);
}

/* ... and the request's place in the name is told, for the journal's record. */
Test(pattern, shape_is_the_first_matching_pattern)
{
	struct sg_match_at at;
	parse_ok("{req}_{int}_{int};omni_{int}_to_{int}_kv_cache_{req}");
	cr_assert_eq(sg_patterns_match(&set, "omni_0_to_1_kv_cache_r9", 23, req, other, &at), SG_MATCH_ONE);
	cr_assert_str_eq(req, "r9");
	cr_assert_eq(at.shape, 1);
	cr_assert_eq(at.req_at, 21);
	cr_assert_eq(at.req_len, 2);
}

Test(pattern, placeholders_do_not_cross_slash)
{
	parse_ok("{req}-{any}");
	cr_assert_eq(match("a-b/c"), SG_MATCH_NONE);
	parse_ok("sub/{req}");
	expect_one("sub/r1", "r1");
	cr_assert_eq(match("sub/r/1"), SG_MATCH_NONE);
}

Test(pattern, literal_only_and_whole_name)
{
	parse_ok("x{req}y");
	expect_one("xmidy", "mid");
	cr_assert_eq(match("xmidyz"), SG_MATCH_NONE);
	cr_assert_eq(match("axmidy"), SG_MATCH_NONE);
}

Test(pattern, names_with_nul_bytes_never_match)
{
	parse_ok("{req}_{any}");
	cr_assert_eq(sg_patterns_match(&set, "a\0_b", 4, req, other, NULL), SG_MATCH_NONE);
	cr_assert_eq(sg_patterns_match(&set, "a_b\0", 4, req, other, NULL), SG_MATCH_NONE);
}

Test(pattern, overlong_names_never_match)
{
	char name[400];
	memset(name, 'a', sizeof(name));
	parse_ok("{req}");
	cr_assert_eq(sg_patterns_match(&set, name, 256, req, other, NULL), SG_MATCH_NONE);
	cr_assert_eq(sg_patterns_match(&set, name, 255, req, other, NULL), SG_MATCH_ONE);
	cr_assert_eq(strlen(req), 255);
}

static void parse_fails(const char *spec, const char *why)
{
	char err[200] = "";
	cr_assert_eq(sg_patterns_parse(&set, spec, err, sizeof(err)), -EINVAL, "'%s' should be rejected", spec);
	cr_assert(strstr(err, why), "'%s': message '%s' should mention '%s'", spec, err, why);
}

/* A pattern's ends are checked before it is tried: at the bounds of each
 * check, a name still matches exactly when the whole pattern does. */
Test(pattern, ends_checked_first_change_no_answer)
{
	parse_ok("{int}_{req}");
	expect_one("1_abc", "abc");
	cr_assert_eq(match("x_abc"), SG_MATCH_NONE);
	cr_assert_eq(match("1_"), SG_MATCH_NONE, "shorter than a byte a placeholder");
	expect_one("1_a", "a");
	parse_ok("shm_{req}.lock");
	expect_one("shm_a.lock", "a");
	expect_one("shm_.lock.lock", ".lock");
	cr_assert_eq(match("shm_.lock"), SG_MATCH_NONE);
	cr_assert_eq(match("shm_a.loc"), SG_MATCH_NONE);
	cr_assert_eq(match("sh_a.lock"), SG_MATCH_NONE);
	parse_ok("{req}_{int};{req}_{int}x");
	expect_one("a_1", "a");
	expect_one("a_1x", "a");
	cr_assert_eq(match("a_1y"), SG_MATCH_NONE);
	/* Both fit, and read two requests: still ambiguous. */
	parse_ok("{req}_{int}_{int};{req}_{int}");
	cr_assert_eq(match("a_1_2"), SG_MATCH_AMBIGUOUS);
	/* The literal at both ends overlaps in the shortest name. */
	parse_ok("ab{req}ba");
	expect_one("abxba", "x");
	cr_assert_eq(match("aba"), SG_MATCH_NONE);
	cr_assert_eq(match("abba"), SG_MATCH_NONE);
}

static unsigned next_random(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 16;
}

static void append(char *name, size_t *len, const char *text, size_t n)
{
	if (*len + n < SG_NAME_MAX) {
		memcpy(name + *len, text, n);
		*len += n;
		name[*len] = '\0';
	}
}

/* A name shaped by pattern p, its pieces now and then changed: the names a
 * pattern matches and those it narrowly does not. */
static size_t shaped_name(const struct sg_pattern *p, unsigned *seed, char *name)
{
	static const char *const pieces[] = {"_", "0", "12", "x", "y", "-", "a", "ab", "ba", "/", ".", "1", "_7", "9"};
	static const char *const digits[] = {"0", "12", "9", "345", "06", "78"};
	const size_t npieces = sizeof(pieces) / sizeof(pieces[0]), ndigits = sizeof(digits) / sizeof(digits[0]);
	size_t len = 0;

	name[0] = '\0';
	for (unsigned k = 0; k < p->ntokens; k++) {
		const struct sg_token *t = &p->tokens[k];
		unsigned roll = next_random(seed) % 16;

		if (roll == 0)
			continue; /* a token left out */
		if (roll == 1) {
			const char *piece = pieces[next_random(seed) % npieces];
			append(name, &len, piece, strlen(piece)); /* another in its place */
			continue;
		}
		if (t->kind == SG_TOK_LITERAL) {
			append(name, &len, p->text + t->off, t->len);
			continue;
		}
		for (unsigned n = 1 + next_random(seed) % 3; n--;) {
			const char *piece = t->kind == SG_TOK_INT ? digits[next_random(seed) % ndigits] : pieces[next_random(seed) % npieces];
			append(name, &len, piece, strlen(piece));
		}
	}
	if (next_random(seed) % 4 == 0) {
		const char *piece = pieces[next_random(seed) % npieces];
		append(name, &len, piece, strlen(piece));
	}
	return len;
}

/* The splits of a name by one pattern, as a naive matcher finds them: every
 * way to read the tokens, one after another, that ends at the name's end. */
struct splits {
	size_t at[512], len[512]; /* where {req} stands in each */
	unsigned n;
};

static void naive_walk(const struct sg_pattern *p, unsigned t, const char *name, size_t len, size_t pos,
		       size_t req_at, struct splits *out)
{
	const struct sg_token *tok = &p->tokens[t];

	if (t == p->ntokens) {
		if (pos == len && out->n < sizeof(out->at) / sizeof(out->at[0])) {
			out->at[out->n] = req_at;
			out->len[out->n++] = 0;
		}
		return;
	}
	if (tok->kind == SG_TOK_LITERAL) {
		if (len - pos >= tok->len && memcmp(name + pos, p->text + tok->off, tok->len) == 0)
			naive_walk(p, t + 1, name, len, pos + tok->len, req_at, out);
		return;
	}
	for (size_t end = pos + 1; end <= len; end++) {
		char c = name[end - 1];
		unsigned before = out->n;

		if (c == '/' || (tok->kind == SG_TOK_INT && (c < '0' || c > '9')))
			break;
		naive_walk(p, t + 1, name, len, end, tok->kind == SG_TOK_REQ ? pos : req_at, out);
		if (tok->kind == SG_TOK_REQ)
			for (unsigned k = before; k < out->n; k++)
				out->len[k] = end - pos;
	}
}

/* What the naive matcher says of name against the set s: the splits of
 * each pattern; none at all for a name that is none (empty, too long, with
 * a NUL byte). */
static void naive_match(const struct sg_pattern_set *s, const char *name, size_t len, struct splits *each)
{
	bool a_name = len > 0 && len <= SG_NAME_MAX && !memchr(name, '\0', len);

	for (unsigned k = 0; k < s->count; k++) {
		each[k].n = 0;
		if (a_name)
			naive_walk(&s->patterns[k], 0, name, len, 0, 0, &each[k]);
	}
}

static bool split_is(const struct splits *sp, const char *name, const char *want, size_t *at)
{
	for (unsigned i = 0; i < sp->n; i++)
		if (sp->len[i] == strlen(want) && memcmp(name + sp->at[i], want, sp->len[i]) == 0) {
			if (at)
				*at = sp->at[i];
			return true;
		}
	return false;
}

/* name (len bytes, for the messages written as far as its first NUL)
 * against the set parsed from spec: the checked entry answers as the naive
 * matcher does, as the position sets alone do (general: the set, no pattern
 * direct), and as the entry for path components does for a name with
 * neither NUL nor '/'. */
static void check_against_naive(const char *spec, const struct sg_pattern_set *general, const char *name, size_t len)
{
	static struct splits each[SG_MAX_PATTERNS];
	char greq[SG_NAME_MAX + 1], gother[SG_NAME_MAX + 1], creq[SG_NAME_MAX + 1], cother[SG_NAME_MAX + 1];
	struct sg_match_at at, gat, cat;
	enum sg_match_result r = sg_patterns_match(&set, name, len, req, other, &at);
	int first = -1;
	bool two = false;
	size_t where;

	naive_match(&set, name, len, each);
	for (unsigned k = 0; k < set.count; k++)
		for (unsigned i = 0; i < each[k].n; i++) {
			if (first < 0)
				first = (int)k;
			two = two || each[k].len[i] != each[first].len[0] ||
			      memcmp(name + each[k].at[i], name + each[first].at[0], each[k].len[i]) != 0;
		}
	cr_assert_eq(r, first < 0 ? SG_MATCH_NONE : two ? SG_MATCH_AMBIGUOUS : SG_MATCH_ONE, "'%s' on '%s'", spec,
		     name);
	if (r == SG_MATCH_ONE) {
		cr_assert_eq(at.shape, first, "'%s' on '%s'", spec, name);
		cr_assert(split_is(&each[first], name, req, &where) && where == at.req_at && at.req_len == strlen(req),
			  "'%s' on '%s': request '%s' at %zu", spec, name, req, at.req_at);
	} else {
		cr_assert_eq(at.shape, -1, "'%s' on '%s'", spec, name);
	}
	if (r == SG_MATCH_AMBIGUOUS) {
		/* The first request from the first pattern that gives one. */
		cr_assert(split_is(&each[first], name, req, NULL), "'%s' on '%s': '%s'", spec, name, req);
		cr_assert_str_neq(req, other, "'%s' on '%s'", spec, name);
		bool known = false;
		for (unsigned k = 0; k < set.count; k++)
			known = known || split_is(&each[k], name, other, NULL);
		cr_assert(known, "'%s' on '%s': '%s'", spec, name, other);
	}

	cr_assert_eq(sg_patterns_match(general, name, len, greq, gother, &gat), r, "'%s' on '%s'", spec, name);
	cr_assert_eq(gat.shape, at.shape, "'%s' on '%s'", spec, name);
	if (r != SG_MATCH_NONE)
		cr_assert_str_eq(req, greq, "'%s' on '%s'", spec, name);
	if (r == SG_MATCH_ONE)
		cr_assert_eq(gat.req_at, at.req_at, "'%s' on '%s'", spec, name);
	if (r == SG_MATCH_AMBIGUOUS)
		cr_assert_str_eq(other, gother, "'%s' on '%s'", spec, name);

	if (memchr(name, '\0', len) || memchr(name, '/', len))
		return;
	cr_assert_eq(sg_patterns_match_component(&set, name, len, creq, cother, &cat), r, "'%s' on '%s'", spec, name);
	cr_assert_eq(cat.shape, at.shape, "'%s' on '%s'", spec, name);
	if (r != SG_MATCH_NONE)
		cr_assert_str_eq(req, creq, "'%s' on '%s'", spec, name);
	if (r == SG_MATCH_ONE)
		cr_assert(cat.req_at == at.req_at && cat.req_len == at.req_len, "'%s' on '%s'", spec, name);
	if (r == SG_MATCH_AMBIGUOUS)
		cr_assert_str_eq(other, cother, "'%s' on '%s'", spec, name);
	cr_assert_eq(sg_patterns_match_component(&set, name, len, NULL, NULL, NULL), r, "'%s' on '%s'", spec, name);
}

/* Patterns whose every {int} is bounded by a non-digit literal on its far
 * side split a name one way at most, and are matched by a scan from each
 * end; the rest by the position sets.  Both answer as a naive matcher
 * does, for names each pattern matches and names it narrowly does not:
 * ambiguous ones, digits at the boundaries, '_' in requests, '/' and NUL
 * bytes, names too long. */
Test(pattern, the_matchers_answer_as_a_naive_one_does)
{
	static const char *const specs[] = {
		"{req}_{int}_{int};shm_{req}_{int}_{int}_lockfile.lock",
		"vllm_offload_{req}.mmap",
		"{int}_{req};{req}_{int}x;x{int}-{req}-{int}y",
		"{req}{int}_{int}",   /* {int} against {req}: the sets */
		"{req}_1{int}",       /* a digit beside {int}: the sets */
		"{int}{int}_{req}",   /* two {int}: the sets */
		"{req}_{any};a{req}", /* {any}: the sets */
		"ab{req}ba;{req}_{int}",
		"{req}_{int}_{int};{req}_{int}_{int}_{int}_{int}", /* two shapes, two requests */
		"{req}_{int};{int}_{req}",
		"kv_{req};kv_{req}",
		"{int}_{req}_{int};{req};{req}.x",
		"sub/{req}_{int};{req}/{int}", /* a '/' in a literal: no component matches */
		"{req}_literal-longer-than-8_{int};pre_{req}_{int}.lock.lock",
		"{any}-{req};{req}-{any}-{int}x",
	};
	const bool want_direct[] = {true,  true,  true, false, false, false, false, true,
				    true,  true,  true, true,  true,  true,  false};
	static struct sg_pattern_set general;
	unsigned seed = 42;

	for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
		unsigned matched = 0;

		parse_ok(specs[s]);
		cr_expect_eq(set.patterns[0].direct, want_direct[s], "'%s'", specs[s]);
		general = set;
		for (unsigned k = 0; k < general.count; k++)
			general.patterns[k].direct = false;
		for (int n = 0; n < 20000; n++) {
			char name[SG_NAME_MAX + 2];
			size_t len = shaped_name(&set.patterns[next_random(&seed) % set.count], &seed, name);
			struct sg_match_at at;

			if (len && next_random(&seed) % 32 == 0)
				name[next_random(&seed) % len] = '\0';
			check_against_naive(specs[s], &general, name, len);
			matched += sg_patterns_match(&set, name, len, req, other, &at) != SG_MATCH_NONE;
		}
		/* Names the patterns match, and names they refuse. */
		cr_expect(matched > 3000 && matched < 19000, "'%s': %u of 20000 matched", specs[s], matched);
		/* At the bounds of a name's length. */
		for (size_t len = SG_NAME_MAX - 2; len <= SG_NAME_MAX + 1; len++) {
			char name[SG_NAME_MAX + 2];

			memset(name, '1', len);
			memcpy(name, "shm_", 4);
			memcpy(name + len - 3, "_2x", 3);
			check_against_naive(specs[s], &general, name, len);
			name[len - 1] = '2';
			check_against_naive(specs[s], &general, name, len);
		}
	}
}

Test(pattern, bad_patterns_are_rejected_with_a_reason)
{
	parse_fails("", "empty pattern");
	parse_fails("{req};;x{req}", "empty pattern");
	parse_fails("{req};", "empty pattern");
	parse_fails("abc", "exactly once");
	parse_fails("{req}{req}", "exactly once");
	parse_fails("{request}", "unknown placeholder");
	parse_fails("{req}_{", "unknown placeholder");
	parse_fails("{req}}", "stray");
}

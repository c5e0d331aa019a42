#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"
#include "encode.h"
#include "size.h"

static const char *escape(const char *s)
{
	static char out[256];
	return sg_text_escape(s, out, sizeof(out));
}

Test(text, utf8_validity)
{
	cr_expect(sg_utf8_valid("plain"));
	cr_expect(sg_utf8_valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
	cr_expect(!sg_utf8_valid("bad\xff"));
	cr_expect(!sg_utf8_valid("\xc0\xaf"), "overlong '/'");
	cr_expect(!sg_utf8_valid("\xed\xa0\x80"), "a surrogate");
	cr_expect(!sg_utf8_valid("\xf4\x90\x80\x80"), "past U+10FFFF");
	cr_expect(!sg_utf8_valid("\xe2\x82"), "cut short");
}

Test(text, escape_leaves_nothing_for_a_terminal)
{
	cr_expect_str_eq(escape("req-1_0"), "req-1_0");
	cr_expect_str_eq(escape("caf\xc3\xa9"), "caf\xc3\xa9");
	cr_expect_str_eq(escape("a\x1b[2Jb"), "a\\x1b[2Jb");
	cr_expect_str_eq(escape("\xc2\x9b" "31m"), "\\xc2\\x9b31m", "a C1 CSI");
	cr_expect_str_eq(escape("bad\xff\xfe"), "bad\\xff\\xfe");
	cr_expect_str_eq(escape("a\\x1b"), "a\\\\x1b", "a backslash cannot forge an escape");
	cr_expect_str_eq(escape("nl\n\t\x7f"), "nl\\x0a\\x09\\x7f");
}

Test(text, escape_cuts_whole_pieces)
{
	char out[8];

	cr_expect_str_eq(sg_text_escape("abcdefghij", out, sizeof(out)), "abcdefg");
	cr_expect_str_eq(sg_text_escape("abcd\x1b", out, sizeof(out)), "abcd", "no half escape");
	cr_expect_str_eq(sg_text_escape("abcde\xc3\xa9", out, sizeof(out)), "abcde\xc3\xa9");
	cr_expect_str_eq(sg_text_escape("abcdef\xc3\xa9", out, sizeof(out)), "abcdef", "no half character");
}

Test(text, lossy_and_hex)
{
	char *l = sg_utf8_lossy("a\xff" "b\xc3\xa9"), *h = sg_hex("a\xff");

	cr_expect_str_eq(l, "a\xef\xbf\xbd" "b\xc3\xa9");
	cr_expect(sg_utf8_valid(l));
	cr_expect_str_eq(h, "61ff");
	free(l);
	free(h);
}

Test(text, human_bytes)
{
	char b[32];

	cr_expect_str_eq(sg_human_bytes(0, b, sizeof(b)), "0 B");
	cr_expect_str_eq(sg_human_bytes(1023, b, sizeof(b)), "1023 B");
	cr_expect_str_eq(sg_human_bytes(1536, b, sizeof(b)), "1.5 KiB");
	cr_expect_str_eq(sg_human_bytes(8 << 20, b, sizeof(b)), "8.0 MiB");
	cr_expect_str_eq(sg_human_bytes(3ull << 30, b, sizeof(b)), "3.0 GiB");
}

static const char *xml(const char *s)
{
	static char out[256];
	FILE *f = fmemopen(out, sizeof(out), "w");

	sg_xml_text(f, s);
	fclose(f);
	return out;
}

/* What goes into XML (JUnit, SVG) is well-formed whatever a name holds. */
Test(text, xml_text_is_always_well_formed)
{
	cr_expect_str_eq(xml("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
	cr_expect_str_eq(xml("caf\xc3\xa9"), "caf\xc3\xa9");
	cr_expect_str_eq(xml("bad\xff\xc3"), "bad??", "bytes that are not UTF-8");
	cr_expect_str_eq(xml("a\x1b\x7f" "b"), "a??b", "control characters XML 1.0 forbids");
}

#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at s, or 0. */
static size_t utf8_seq(const unsigned char *s)
{
	unsigned c = s[0], min, len;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, min = 0x80, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, min = 0x800, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, min = 0x10000, cp = c & 0x07;
	else
		return 0;
	for (unsigned i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80) /* also stops at the terminating '\0' */
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

bool sg_utf8_valid(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = utf8_seq(p);
		if (!n)
			return false;
		p += n;
	}
	return true;
}

const char *sg_text_escape(const char *s, char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;

	while (*p) {
		size_t n = utf8_seq(p);
		/* C1 controls, U+0080 to U+009F, are 0xc2 0x80 to 0xc2 0x9f. */
		bool c1 = n == 2 && p[0] == 0xc2 && p[1] < 0xa0;
		bool plain = n > 1 ? !c1 : n == 1 && *p >= 0x20 && *p != 0x7f && *p != '\\';

		if (plain) {
			if (o + n >= outlen)
				break;
			memcpy(out + o, p, n);
			o += n;
			p += n;
			continue;
		}
		/* Escaped byte by byte: a C1 control shows both its bytes. */
		for (size_t k = 0; k < (n ? n : 1); k++, p++) {
			if (o + 4 >= outlen)
				goto done;
			out[o++] = '\\';
			if (*p == '\\') {
				out[o++] = '\\';
				continue;
			}
			out[o++] = 'x';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		}
	}
done:
	out[o] = '\0';
	return out;
}

char *sg_utf8_lossy(const char *s)
{
	size_t len = strlen(s);
	char *out = malloc(len * 3 + 1), *o = out; /* one byte grows to at most U+FFFD's three */

	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = utf8_seq(p);
		if (n) {
			memcpy(o, p, n);
			o += n;
			p += n;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			p++;
		}
	}
	*o = '\0';
	return out;
}

char *sg_hex(const char *s)
{
	static const char digits[] = "0123456789abcdef";
	size_t len = strlen(s);
	char *out = malloc(len * 2 + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[(unsigned char)s[i] >> 4];
		out[2 * i + 1] = digits[(unsigned char)s[i] & 15];
	}
	out[len * 2] = '\0';
	return out;
}

void sg_xml_text(FILE *out, const char *s)
{
	for (const unsigned char *c = (const unsigned char *)s; *c;) {
		size_t len = utf8_seq(c);

		switch (*c) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		default:
			if (!len || *c < 0x20 || *c == 0x7f)
				fputc('?', out);
			else
				fwrite(c, 1, len, out);
		}
		c += len ? len : 1;
	}
}

const char *sg_human_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *units[] = {"KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	unsigned u = 0;

	if (bytes < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	for (v /= 1024; v >= 1024 && u < 3; v /= 1024)
		u++;
	snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

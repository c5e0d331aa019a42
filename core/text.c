#include "core.h"
#include "text.h"

#include <stdint.h>
#include <string.h>

size_t sg_utf8_seq(const unsigned char *s)
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
		size_t n = sg_utf8_seq(p);
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
		size_t n = sg_utf8_seq(p);
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

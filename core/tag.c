#include "core.h"
#include "tag.h"

#include <errno.h>
#include <string.h>

#include "reqid.h"

#define TAG_MAGIC "shmguard/1 "

/* Appends "key=<v> " at p; returns the end.  (snprintf would do, but this
 * runs on every tagged creation: two digits a division.) */
static char *put_field(char *p, const char *key, uint64_t v)
{
	static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				    "8081828384858687888990919293949596979899";
	char digits[20], *d = digits + sizeof(digits);
	size_t n;

	while (*key)
		*p++ = *key++;
	*p++ = '=';
	for (; v >= 100; v /= 100)
		d = memcpy(d - 2, pairs + 2 * (v % 100), 2);
	if (v >= 10)
		d = memcpy(d - 2, pairs + 2 * v, 2);
	else
		*--d = (char)('0' + v);
	n = (size_t)(digits + sizeof(digits) - d);
	memcpy(p, d, n);
	p += n;
	*p++ = ' ';
	return p;
}

void sg_tag_head_init(struct sg_tag_head *head, pid_t pid, uint64_t start_ticks, uint64_t pidns)
{
	char *p = head->text; /* magic + three fields of at most 20 digits: fits */

	memcpy(p, TAG_MAGIC, sizeof(TAG_MAGIC) - 1);
	p += sizeof(TAG_MAGIC) - 1;
	p = put_field(p, "pid", (uint64_t)pid);
	p = put_field(p, "start", start_ticks);
	if (pidns)
		p = put_field(p, "ns", pidns);
	head->len = (size_t)(p - head->text);
}

int sg_tag_encode_with(const struct sg_tag_head *head, uint64_t created_ns, const char *req, char *buf,
		       size_t buflen)
{
	char mid[sizeof("created=") + 20 + sizeof(" req=")], *p = mid;
	size_t rlen = strlen(req), mlen;

	p = put_field(p, "created", created_ns);
	memcpy(p, "req=", 4);
	mlen = (size_t)(p + 4 - mid);
	if (head->len + mlen + rlen > buflen)
		return -ENOBUFS;
	memcpy(buf, head->text, head->len);
	memcpy(buf + head->len, mid, mlen);
	memcpy(buf + head->len + mlen, req, rlen);
	return (int)(head->len + mlen + rlen);
}

int sg_tag_encode(const struct sg_tag *tag, char *buf, size_t buflen)
{
	struct sg_tag_head head;

	sg_tag_head_init(&head, tag->pid, tag->start_ticks, tag->pidns);
	return sg_tag_encode_with(&head, tag->created_ns, tag->req, buf, buflen);
}

/* Reads "key=<decimal>" followed by a space; advances *p. */
static int read_field(const char **p, const char *end, const char *key, uint64_t max, uint64_t *out)
{
	size_t klen = strlen(key);
	uint64_t v = 0;
	const char *s = *p;

	if ((size_t)(end - s) < klen + 2 || memcmp(s, key, klen) != 0 || s[klen] != '=')
		return -EINVAL;
	s += klen + 1;
	if (s == end || *s < '0' || *s > '9')
		return -EINVAL;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		if (v > (max - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (s == end || *s != ' ')
		return -EINVAL;
	*p = s + 1;
	*out = v;
	return 0;
}

int sg_tag_decode(struct sg_tag *tag, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	uint64_t pid, start, ns = 0, created;
	size_t rlen;

	if (len < sizeof(TAG_MAGIC) - 1 || memcmp(p, TAG_MAGIC, sizeof(TAG_MAGIC) - 1) != 0)
		return -EINVAL;
	p += sizeof(TAG_MAGIC) - 1;
	if (read_field(&p, end, "pid", 0x7fffffff, &pid) < 0 || pid == 0 ||
	    read_field(&p, end, "start", UINT64_MAX, &start) < 0 ||
	    (end - p >= 3 && memcmp(p, "ns=", 3) == 0 && (read_field(&p, end, "ns", UINT64_MAX, &ns) < 0 || ns == 0)) ||
	    read_field(&p, end, "created", UINT64_MAX, &created) < 0)
		return -EINVAL;
	if ((size_t)(end - p) < 4 || memcmp(p, "req=", 4) != 0)
		return -EINVAL;
	p += 4;
	rlen = (size_t)(end - p);
	if (rlen == 0 || rlen > SG_NAME_MAX || memchr(p, '\0', rlen))
		return -EINVAL;
	memcpy(tag->req, p, rlen);
	tag->req[rlen] = '\0';
	if (sg_reqid_invalid(tag->req))
		return -EINVAL;
	tag->pid = (pid_t)pid;
	tag->start_ticks = start;
	tag->pidns = ns;
	tag->created_ns = created;
	return 0;
}

#include "core.h"
#include "reqid.h"

#include <errno.h>
#include <string.h>

#include "pattern.h"

static const char *refusal(const char *id)
{
	size_t len = strlen(id);

	if (len == 0)
		return "it is empty";
	if (len > SG_NAME_MAX)
		return "it is longer than 255 bytes";
	if (strchr(id, '/'))
		return "it contains '/'";
	if (strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
		return "'.' and '..' are not request IDs";
	return NULL;
}

int sg_reqid_check(const char *id, const char **why)
{
	*why = refusal(id);
	return *why ? -EINVAL : 0;
}

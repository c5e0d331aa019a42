#include "core.h"
#include "reqid.h"

#include <string.h>

#include "pattern.h"

const char *sg_reqid_invalid(const char *id)
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

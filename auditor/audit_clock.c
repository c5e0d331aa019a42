#include "audit_clock.h"

#include "audit_engine.h"
#include "clock.h"

uint64_t audit_clock_ns(const struct audit *a)
{
	return a->clock.now_ns ? a->clock.now_ns(a->clock.ctx) : sg_monotonic_ns();
}

double audit_now_s(const struct audit *a)
{
	return (audit_clock_ns(a) - a->start_ns) / 1e9;
}

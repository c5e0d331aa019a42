#include "plot_svg.h"

#include <errno.h>
#include <math.h>

#include "text.h"
#include "encode.h"

/* The drawing area inside an 880 x 440 picture. */
enum { WIDTH = 880, HEIGHT = 440, LEFT = 80, RIGHT = 20, TOP = 40, BOTTOM = 70 };
#define PLOT_W (WIDTH - LEFT - RIGHT)
#define PLOT_H (HEIGHT - TOP - BOTTOM)

#define COLOR_TRACKED "#1f77b4"
#define COLOR_ABORTED "#d62728"
#define COLOR_BUDGET "#2ca02c"
#define COLOR_ABORTS "#ff7f0e"

struct scale {
	double t_max, y_max;
	double unit;           /* bytes per axis unit */
	const char *unit_name; /* B, KiB, MiB, GiB */
};

static double x_of(const struct scale *s, double t)
{
	return LEFT + PLOT_W * (t / s->t_max);
}

static double y_of(const struct scale *s, double bytes)
{
	return TOP + PLOT_H * (1.0 - bytes / s->y_max);
}

/* A round step (1, 2 or 5 times a power of ten) that cuts range into about
 * five ticks. */
static double tick_step(double range)
{
	double raw = range / 5, mag = pow(10, floor(log10(raw))), f = raw / mag;

	return mag * (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10);
}

/* Bytes allowed after the aborts seen by t: the budget line. */
static double budget_at(const struct plot *p, size_t aborts_so_far)
{
	return p->budget_kib_per_abort * 1024.0 * (double)aborts_so_far;
}

static struct scale make_scale(const struct plot *p)
{
	static const char *names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	struct scale s = {.t_max = p->duration_s > 0 ? p->duration_s : 1, .y_max = 1024};
	unsigned u = 0;

	for (size_t i = 0; i < p->nsamples; i++) {
		s.t_max = fmax(s.t_max, p->samples[i].t_s);
		s.y_max = fmax(s.y_max, (double)p->samples[i].tracked_bytes);
		s.y_max = fmax(s.y_max, (double)p->samples[i].aborted_bytes);
	}
	if (p->has_budget)
		s.y_max = fmax(s.y_max, budget_at(p, p->naborts));
	for (s.unit = 1; s.y_max / s.unit >= 1024 && u + 1 < sizeof(names) / sizeof(names[0]); u++)
		s.unit *= 1024;
	s.unit_name = names[u];
	/* Headroom, ending on a tick. */
	double step = tick_step(s.y_max * 1.1 / s.unit);
	s.y_max = ceil(s.y_max * 1.1 / s.unit / step) * step * s.unit;
	return s;
}

static void axes(FILE *out, const struct plot *p, const struct scale *s)
{
	double ystep = tick_step(s->y_max / s->unit), tstep = tick_step(s->t_max);

	fprintf(out, "<g id=\"axes\" font-family=\"sans-serif\" font-size=\"12\" fill=\"#333\">\n");
	fprintf(out, "<text x=\"%d\" y=\"24\" font-size=\"15\">", LEFT);
	sg_xml_text(out, p->title ? p->title : "shmguard audit");
	fprintf(out, "</text>\n");
	for (double v = 0; v <= s->y_max / s->unit + ystep / 2; v += ystep) {
		double y = y_of(s, v * s->unit);
		fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", LEFT, y,
			LEFT + PLOT_W, y);
		fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g %s</text>\n", LEFT - 6, y + 4, v,
			s->unit_name);
	}
	for (double t = 0; t <= s->t_max + tstep / 2; t += tstep)
		fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%gs</text>\n", x_of(s, t),
			TOP + PLOT_H + 32, t);
	fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n", LEFT,
		TOP, PLOT_W, PLOT_H);
	fprintf(out, "</g>\n");
}

static void series(FILE *out, const struct plot *p, const struct scale *s, const char *id, const char *color,
		   bool aborted)
{
	fprintf(out, "<polyline id=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", id, color);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct plot_sample *x = &p->samples[i];
		fprintf(out, "%s%.1f,%.1f", i ? " " : "", x_of(s, x->t_s),
			y_of(s, (double)(aborted ? x->aborted_bytes : x->tracked_bytes)));
	}
	fprintf(out, "\"/>\n");
}

/* A step line: the budget grows by one abort's allowance at each marker. */
static void budget(FILE *out, const struct plot *p, const struct scale *s)
{
	fprintf(out, "<polyline id=\"budget\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
		     "stroke-dasharray=\"6 4\" points=\"%.1f,%.1f",
		COLOR_BUDGET, x_of(s, 0), y_of(s, 0));
	for (size_t i = 0; i < p->naborts; i++) {
		double x = x_of(s, p->abort_s[i]);
		fprintf(out, " %.1f,%.1f %.1f,%.1f", x, y_of(s, budget_at(p, i)), x, y_of(s, budget_at(p, i + 1)));
	}
	fprintf(out, " %.1f,%.1f\"/>\n", x_of(s, s->t_max), y_of(s, budget_at(p, p->naborts)));
}

static void abort_ticks(FILE *out, const struct plot *p, const struct scale *s)
{
	fprintf(out, "<g id=\"aborts\" stroke=\"%s\" stroke-width=\"2\">\n", COLOR_ABORTS);
	for (size_t i = 0; i < p->naborts; i++) {
		double x = x_of(s, p->abort_s[i]);
		fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n", x, TOP + PLOT_H, x,
			TOP + PLOT_H + 12);
	}
	fprintf(out, "</g>\n");
}

static void legend(FILE *out, const struct plot *p)
{
	const struct {
		const char *color, *label;
		bool shown;
	} items[] = {
		{COLOR_TRACKED, "tracked bytes", true},
		{COLOR_ABORTED, "held by aborted requests", true},
		{COLOR_BUDGET, "budget", p->has_budget},
		{COLOR_ABORTS, "abort markers", true},
	};
	int x = LEFT;

	fprintf(out, "<g id=\"legend\" font-family=\"sans-serif\" font-size=\"12\" fill=\"#333\">\n");
	for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
		if (!items[i].shown)
			continue;
		fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"4\" fill=\"%s\"/>", x, HEIGHT - 16,
			items[i].color);
		fprintf(out, "<text x=\"%d\" y=\"%d\">%s</text>\n", x + 20, HEIGHT - 11, items[i].label);
		x += 200;
	}
	fprintf(out, "</g>\n");
}

int plot_svg_write(FILE *out, const struct plot *p)
{
	struct scale s = make_scale(p);

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n"
		     "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		WIDTH, HEIGHT, WIDTH, HEIGHT);
	axes(out, p, &s);
	if (p->has_budget)
		budget(out, p, &s);
	series(out, p, &s, "tracked", COLOR_TRACKED, false);
	series(out, p, &s, "aborted", COLOR_ABORTED, true);
	abort_ticks(out, p, &s);
	legend(out, p);
	fprintf(out, "</svg>\n");
	return fflush(out) == 0 && !ferror(out) ? 0 : -EIO;
}

// Minimal SVG charts for the simulator's reports: line charts (a value over
// time per policy) and grouped bar charts (a value per category and policy),
// with axes, "nice" ticks, labels and a legend. Self-contained text output,
// no plotting dependency; viewable in any browser and in GitHub's Markdown.
//
// Pure functions returning the SVG document; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace dancemoe::sim {

struct ChartSeries {
  std::string name;
  std::vector<double> x;  // line charts only
  std::vector<double> y;  // line: one per x; bar: one per category
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<ChartSeries> series;
  bool y_from_zero = true;
  double y_max = 0.0;  // > 0: fixed top of the y axis (e.g. 1 for ratios)
};

struct BarChart {
  std::string title;
  std::string y_label;
  std::vector<std::string> categories;
  std::vector<ChartSeries> series;  // one bar per series within each category
  bool log_y = false;
};

std::string render_line_chart(const LineChart& chart);
std::string render_bar_chart(const BarChart& chart);

// "nice" tick values covering [lo, hi] (steps of 1, 2 or 5 times a power of ten).
std::vector<double> nice_ticks(double lo, double hi, int target_count);

}  // namespace dancemoe::sim

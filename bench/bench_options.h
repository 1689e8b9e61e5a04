// The benchmark programs' command lines: each names its options in a table. --help prints them;
// an option not in the table, one without its value, or a number that does not parse is refused
// with the usage and exit status 2, not ignored (a mistyped flag had started a benchmark of
// several minutes with the defaults).
#ifndef REPROKIT_BENCH_OPTIONS_H
#define REPROKIT_BENCH_OPTIONS_H

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace reprokit::bench {

struct BenchOption {
  const char* name;   // "--iters"
  const char* value;  // what its value is ("N"), nullptr for a flag
  const char* help;
};

class BenchOptions {
 public:
  BenchOptions(int argc, char** argv, std::string program, std::vector<BenchOption> table) : program_(std::move(program)), table_(std::move(table)) {
    for (int i = 1; i < argc; ++i) {
      const std::string_view arg = argv[i];
      if (arg == "--help" || arg == "-h") {
        fmt::print("{}", usage());
        std::exit(0);
      }
      const BenchOption* option = find(arg);
      if (!option) refuse(fmt::format("unknown option {}", arg));
      if (!option->value) {
        given_[option->name].emplace_back();
        continue;
      }
      if (i + 1 >= argc) refuse(fmt::format("{} needs a value ({})", arg, option->value));
      given_[option->name].emplace_back(argv[++i]);
    }
  }

  bool flag(const char* name) const { return given_.count(name) != 0; }
  // The last value given for an option, or `fallback`.
  std::string text(const char* name, std::string fallback) const {
    auto it = given_.find(name);
    return it == given_.end() ? fallback : it->second.back();
  }
  // Every value given for a repeatable option, in order.
  std::vector<std::string> texts(const char* name) const {
    auto it = given_.find(name);
    return it == given_.end() ? std::vector<std::string>{} : it->second;
  }
  // A whole number of at least `least`, or `fallback` when the option is absent.
  int number(const char* name, int fallback, int least) const {
    auto it = given_.find(name);
    if (it == given_.end()) return fallback;
    const std::string& v = it->second.back();
    int n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < least)
      refuse(fmt::format("{} takes a whole number of at least {}, not '{}'", name, least, v));
    return n;
  }
  // A bad value the program found itself: the reason, the usage, exit status 2.
  [[noreturn]] void refuse(const std::string& why) const {
    fmt::print(stderr, "{}: {}\n{}", program_, why, usage());
    std::exit(2);
  }

 private:
  const BenchOption* find(std::string_view arg) const {
    for (const BenchOption& o : table_)
      if (arg == o.name) return &o;
    return nullptr;
  }
  std::string usage() const {
    std::string s = "usage: " + program_;
    for (const BenchOption& o : table_) s += o.value ? fmt::format(" [{} {}]", o.name, o.value) : fmt::format(" [{}]", o.name);
    s += "\n";
    for (const BenchOption& o : table_) s += fmt::format("  {:<24} {}\n", o.value ? fmt::format("{} {}", o.name, o.value) : o.name, o.help);
    return s;
  }
  std::string program_;
  std::vector<BenchOption> table_;
  std::map<std::string, std::vector<std::string>, std::less<>> given_;
};

}  // namespace reprokit::bench

#endif  // REPROKIT_BENCH_OPTIONS_H

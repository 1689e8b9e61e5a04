// Parser of the .rk text format (DESIGN.md): a small hand-written lexer and recursive-descent
// parser. Errors carry file, line and column and say what was expected.
#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "reprokit/support/errors.h"
#include "reprokit/ir/names.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/ir/verifier.h"
#include "reprokit/support/files.h"

namespace reprokit {

namespace {

// A character of a name after its first (names.h): value names, graph names, and the op, dtype
// and attribute words, which simply never hold a '.'.
bool is_name_char(char x) { return std::isalnum(static_cast<unsigned char>(x)) || x == '_' || x == '.'; }

enum class Tok { ident, value, number, string, punct, end };

struct Token {
  Tok kind;
  std::string text;
  int line, col;
};

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::end: return "end of file";
    case Tok::value: return "'%" + t.text + "'";
    case Tok::string: return "string \"" + t.text + "\"";
    default: return "'" + t.text + "'";
  }
}

class Lexer {
 public:
  Lexer(std::string_view src, const std::string& file) : src_(src), file_(file) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    for (;;) {
      skip_space();
      int l = line_, c = col_;
      if (pos_ >= src_.size()) {
        out.push_back({Tok::end, "", l, c});
        return out;
      }
      char ch = src_[pos_];
      if (ch == '%') {
        advance();
        std::string name = take_while(is_name_char);
        if (name.empty()) throw ParseError(file_, l, c, "expected a value name after '%'");
        out.push_back({Tok::value, name, l, c});
      } else if (std::isdigit(static_cast<unsigned char>(ch)) ||
                 ((ch == '-' || ch == '+' || ch == '.') && pos_ + 1 < src_.size() &&
                  (std::isdigit(static_cast<unsigned char>(src_[pos_ + 1])) || src_[pos_ + 1] == '.' || src_[pos_ + 1] == 'i'))) {
        out.push_back({Tok::number, lex_number(l, c), l, c});
      } else if (std::isalpha(static_cast<unsigned char>(ch)) || ch == '_') {
        out.push_back({Tok::ident, take_while(is_name_char), l, c});
      } else if (ch == '"') {
        out.push_back({Tok::string, lex_string(l, c), l, c});
      } else if (std::string_view("()[]{},:=@").find(ch) != std::string_view::npos) {
        advance();
        out.push_back({Tok::punct, std::string(1, ch), l, c});
      } else {
        throw ParseError(file_, l, c, fmt::format("unexpected character '{}'", ch));
      }
    }
  }

 private:
  void advance() {
    if (src_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else ++col_;
    ++pos_;
  }
  void skip_space() {
    while (pos_ < src_.size()) {
      if (src_[pos_] == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') advance();
      } else if (std::isspace(static_cast<unsigned char>(src_[pos_]))) {
        advance();
      } else {
        break;
      }
    }
  }
  template <class F> std::string take_while(F f) {
    std::string s;
    while (pos_ < src_.size() && f(src_[pos_])) {
      s += src_[pos_];
      advance();
    }
    return s;
  }
  std::string lex_number(int l, int c) {
    std::string s;
    if (src_[pos_] == '-' || src_[pos_] == '+') {
      s += src_[pos_];
      advance();
    }
    if (src_.substr(pos_, 3) == "inf") {
      advance();
      advance();
      advance();
      return s + "inf";
    }
    s += take_while([](char x) { return std::isalnum(static_cast<unsigned char>(x)) || x == '.'; });
    // exponent sign: 1e-5
    while (pos_ < src_.size() && (src_[pos_] == '-' || src_[pos_] == '+') && !s.empty() && (s.back() == 'e' || s.back() == 'E')) {
      s += src_[pos_];
      advance();
      s += take_while([](char x) { return std::isdigit(static_cast<unsigned char>(x)); });
    }
    return s;
  }
  std::string lex_string(int l, int c) {
    advance();  // opening quote
    std::string s;
    while (pos_ < src_.size() && src_[pos_] != '"') {
      if (src_[pos_] == '\n') throw ParseError(file_, l, c, "unterminated string");
      if (src_[pos_] == '\\' && pos_ + 1 < src_.size()) {
        advance();
        s += src_[pos_] == 'n' ? '\n' : src_[pos_];
        advance();
        continue;
      }
      s += src_[pos_];
      advance();
    }
    if (pos_ >= src_.size()) throw ParseError(file_, l, c, "unterminated string");
    advance();
    return s;
  }

  std::string_view src_;
  const std::string& file_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

// A positional or named argument of a node, before it is matched against the op's schema.
struct Arg {
  std::string name;  // empty for positional
  bool is_value = false;
  std::string value_name;
  AttrValue literal;
  Token where;
};

class Parser {
 public:
  Parser(std::vector<Token> toks, const std::string& file) : toks_(std::move(toks)), file_(file) {}

  Module module() {
    Module m;
    while (peek().kind != Tok::end) {
      Graph g = graph();
      for (auto& other : m.graphs)
        if (other.name == g.name) throw error_at(graph_name_tok_, fmt::format("duplicate graph name '{}'", g.name));
      m.graphs.push_back(std::move(g));
    }
    if (m.graphs.empty()) throw ParseError(file_, peek().line, peek().col, "expected 'graph', got end of file (the file holds no graph)");
    return m;
  }

 private:
  const Token& peek() const { return toks_[pos_]; }
  Token next() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }
  ParseError error_at(const Token& t, const std::string& msg) const { return ParseError(file_, t.line, t.col, msg); }
  bool is_punct(const char* p) const { return peek().kind == Tok::punct && peek().text == p; }
  Token expect_punct(const char* p, const char* context) {
    if (!is_punct(p)) throw error_at(peek(), fmt::format("expected '{}' {}, got {}", p, context, describe(peek())));
    return next();
  }
  Token expect(Tok kind, const char* what) {
    if (peek().kind != kind) throw error_at(peek(), fmt::format("expected {}, got {}", what, describe(peek())));
    return next();
  }

  Graph graph() {
    Token kw = peek();
    if (kw.kind != Tok::ident || kw.text != "graph") throw error_at(kw, fmt::format("expected 'graph', got {}", describe(kw)));
    next();
    graph_name_tok_ = expect(Tok::ident, "a graph name");
    if (!is_valid_name(graph_name_tok_.text))
      throw error_at(graph_name_tok_, fmt::format("invalid graph name '{}': names match [A-Za-z_][A-Za-z0-9_.]* with at most {} characters",
                                                  printable(graph_name_tok_.text), kMaxNameLength));
    Graph g;
    g.name = graph_name_tok_.text;
    names_.clear();
    expect_punct("(", "after the graph name");
    if (!is_punct(")")) {
      for (;;) {
        input(g);
        if (is_punct(",")) {
          next();
          continue;
        }
        break;
      }
    }
    expect_punct(")", "to close the input list");
    expect_punct("{", "to open the graph body");
    bool returned = false;
    while (!is_punct("}")) {
      if (peek().kind == Tok::end) throw error_at(peek(), fmt::format("expected '}}' to close graph {}, got end of file", g.name));
      if (returned) throw error_at(peek(), fmt::format("expected '}}' after the return statement, got {}", describe(peek())));
      if (peek().kind == Tok::ident && peek().text == "return") {
        next();
        ret(g);
        returned = true;
        continue;
      }
      node(g);
    }
    if (!returned) throw error_at(peek(), fmt::format("graph {} has no return statement", g.name));
    next();
    return g;
  }

  void define(Graph& g, const Token& t) {
    if (!is_valid_name(t.text))
      throw error_at(t, fmt::format("invalid value name '%{}': names match [A-Za-z_][A-Za-z0-9_.]* with at most {} characters", printable(t.text),
                                    kMaxNameLength));
    if (names_.count(t.text)) throw error_at(t, fmt::format("duplicate value name %{}", t.text));
    names_[t.text] = g.size();
  }

  void input(Graph& g) {
    Token name = expect(Tok::value, "an input like %x: f32[2, 3]");
    expect_punct(":", "after the input name");
    Node n;
    n.name = name.text;
    n.op = Op::input;
    Token dt = expect(Tok::ident, "a dtype (f16 bf16 f32 f64 i8 u8 i16 u16 i32 i64 bool)");
    auto d = parse_dtype(dt.text);
    if (!d) throw error_at(dt, fmt::format("unknown dtype '{}' (expected f16 bf16 f32 f64 i8 u8 i16 u16 i32 i64 bool)", dt.text));
    n.type.dtype = *d;
    n.type.shape = int_list("a shape like [2, 3]");
    define(g, name);
    for (;;) {
      if (peek().kind == Tok::ident && peek().text == "strides") {
        next();
        expect_punct("=", "after 'strides'");
        n.type.strides = int_list("a stride list like [3, 1]");
        if (n.type.strides.size() != n.type.shape.size())
          throw error_at(name, fmt::format("input %{} has {} strides for rank {}", name.text, n.type.strides.size(), n.type.shape.size()));
      } else if (peek().kind == Tok::ident && peek().text == "grad") {
        next();
        n.type.requires_grad = true;
      } else if (is_punct("@")) {
        next();
        Token dev = expect(Tok::ident, "a device (cpu or cuda)");
        if (dev.text == "cuda") n.type.device = Device::cuda;
        else if (dev.text == "cpu") n.type.device = Device::cpu;
        else throw error_at(dev, fmt::format("unknown device '{}' (expected cpu or cuda)", dev.text));
      } else {
        break;
      }
    }
    g.nodes.push_back(std::move(n));
    try {
      verify_node(g, g.size() - 1);
    } catch (const VerifyError& e) { throw error_at(name, e.what()); }
  }

  Shape int_list(const char* what) {
    expect_punct("[", fmt::format("to start {}", what).c_str());
    Shape out;
    while (!is_punct("]")) {
      Token t = expect(Tok::number, "an integer");
      out.push_back(parse_int(t));
      if (is_punct(",")) next();
      else if (!is_punct("]")) throw error_at(peek(), fmt::format("expected ',' or ']' in {}, got {}", what, describe(peek())));
    }
    next();
    return out;
  }

  int64_t parse_int(const Token& t) {
    try {
      size_t used = 0;
      int64_t v = std::stoll(t.text, &used);
      if (used != t.text.size()) throw std::invalid_argument("");
      return v;
    } catch (...) { throw error_at(t, fmt::format("expected an integer, got '{}'", t.text)); }
  }

  AttrValue number(const Token& t) {
    const std::string& s = t.text;
    bool is_float = s.find_first_of(".eEn") != std::string::npos;  // '.', exponent, inf, nan
    if (!is_float) return AttrValue(parse_int(t));
    std::string body = s;
    if (body == "inf" || body == "+inf") return AttrValue(HUGE_VAL);
    if (body == "-inf") return AttrValue(-HUGE_VAL);
    try {
      size_t used = 0;
      double v = std::stod(body, &used);
      if (used != body.size()) throw std::invalid_argument("");
      return AttrValue(v);
    } catch (...) { throw error_at(t, fmt::format("malformed number '{}'", s)); }
  }

  // Lists nest (attributes hold lists of lists at most); a bound keeps hostile nesting off the stack.
  static constexpr int kMaxListDepth = 16;

  AttrValue literal_value(int depth = 0) {
    const Token& t = peek();
    if (t.kind == Tok::number) return number(next());
    if (t.kind == Tok::string) return AttrValue(next().text);
    if (t.kind == Tok::ident) {
      Token id = next();
      if (id.text == "true") return AttrValue(true);
      if (id.text == "false") return AttrValue(false);
      if (id.text == "nan") return AttrValue(std::nan(""));
      if (id.text == "inf") return AttrValue(HUGE_VAL);
      if (auto d = parse_dtype(id.text)) return AttrValue(*d);
      throw error_at(id, fmt::format("expected a value (number, true/false, \"string\", dtype or [list]), got '{}'", id.text));
    }
    if (is_punct("[")) {
      if (depth >= kMaxListDepth) throw error_at(t, fmt::format("lists nest deeper than {} levels", kMaxListDepth));
      next();
      AttrValue::List l;
      while (!is_punct("]")) {
        l.push_back(literal_value(depth + 1));
        if (is_punct(",")) next();
        else if (!is_punct("]")) throw error_at(peek(), fmt::format("expected ',' or ']' in a list, got {}", describe(peek())));
      }
      next();
      return AttrValue(std::move(l));
    }
    throw error_at(t, fmt::format("expected a value (number, true/false, \"string\", dtype or [list]), got {}", describe(t)));
  }

  void node(Graph& g) {
    Token name = expect(Tok::value, "a node like %y = op(...) or 'return'");
    expect_punct("=", fmt::format("after %{}", name.text).c_str());
    Token op = expect(Tok::ident, "an op name");
    const OpSchema* schema = op.text == "input" ? nullptr : find_op(op.text);
    if (!schema) throw error_at(op, fmt::format("unknown op '{}'", op.text));
    expect_punct("(", fmt::format("after '{}'", op.text).c_str());
    std::vector<Arg> args;
    while (!is_punct(")")) {
      Arg a;
      a.where = peek();
      if (peek().kind == Tok::value) {
        a.is_value = true;
        a.value_name = next().text;
      } else if (peek().kind == Tok::ident && pos_ + 1 < toks_.size() && toks_[pos_ + 1].kind == Tok::punct && toks_[pos_ + 1].text == "=") {
        a.name = next().text;
        next();
        a.literal = literal_value();
      } else {
        a.literal = literal_value();
      }
      args.push_back(std::move(a));
      if (is_punct(",")) next();
      else if (!is_punct(")")) throw error_at(peek(), fmt::format("expected ',' or ')' in the arguments of {}, got {}", op.text, describe(peek())));
    }
    next();
    Node n;
    n.name = name.text;
    n.op = schema->op;
    bind_args(g, n, *schema, args);
    define(g, name);
    g.nodes.push_back(std::move(n));
    try {
      verify_node(g, g.size() - 1);
    } catch (const VerifyError& e) { throw error_at(name, e.what()); }
  }

  // Matches arguments to the schema: values and literals in tensor_or_scalar slots become
  // operands; other positional literals fill the attributes in schema order.
  void bind_args(const Graph& g, Node& n, const OpSchema& s, const std::vector<Arg>& args) {
    bool variadic = !s.params.empty() && s.params[0].kind == ParamKind::variadic_tensor;
    size_t next_attr = 0;
    bool named_seen = false;
    for (auto& a : args) {
      if (!a.name.empty()) {
        named_seen = true;
        if (n.attrs.count(a.name)) throw error_at(a.where, fmt::format("attribute '{}' given twice", a.name));
        n.attrs[a.name] = a.literal;
        continue;
      }
      if (named_seen) throw error_at(a.where, "positional argument after a named attribute");
      if (a.is_value) {
        auto it = names_.find(a.value_name);
        if (it == names_.end()) throw error_at(a.where, fmt::format("use of undefined value %{}", a.value_name));
        n.operands.push_back(Operand::of(it->second));
        continue;
      }
      size_t slot = n.operands.size();
      if (!variadic && slot < s.params.size() && s.params[slot].kind == ParamKind::tensor_or_scalar && next_attr == 0) {
        n.operands.push_back(Operand::scalar(a.literal));
        continue;
      }
      if (!variadic && slot < s.params.size() && s.params[slot].kind == ParamKind::tensor && next_attr == 0)
        throw error_at(a.where, fmt::format("operand {} ({}) of {} must be a tensor value, got the literal {}", slot + 1, s.params[slot].name, s.name,
                                            a.literal.str()));
      if (next_attr >= s.attrs.size())
        throw error_at(a.where, fmt::format("unexpected argument {} for {} (it takes {} attribute{})", a.literal.str(), s.name, s.attrs.size(),
                                            s.attrs.size() == 1 ? "" : "s"));
      n.attrs[s.attrs[next_attr++].name] = a.literal;
    }
    (void)g;
  }

  void ret(Graph& g) {
    bool paren = is_punct("(");
    if (paren) next();
    for (;;) {
      Token v = expect(Tok::value, "a returned value like %y");
      auto it = names_.find(v.text);
      if (it == names_.end()) throw error_at(v, fmt::format("return of undefined value %{}", v.text));
      g.outputs.push_back(it->second);
      if (is_punct(",")) {
        next();
        continue;
      }
      break;
    }
    if (paren) expect_punct(")", "to close the return list");
  }

  std::vector<Token> toks_;
  const std::string& file_;
  size_t pos_ = 0;
  std::unordered_map<std::string, int> names_;
  Token graph_name_tok_{};
};

}  // namespace

Module parse_module(std::string_view text, const std::string& file) {
  Parser p(Lexer(text, file).run(), file);
  Module m = p.module();
  verify(m);
  return m;
}

Graph parse_graph(std::string_view text, const std::string& file) { return parse_module(text, file).graphs.front(); }

Module load_module_file(const std::string& path) { return parse_module(read_file(path, kMaxTextFileBytes), path); }

}  // namespace reprokit

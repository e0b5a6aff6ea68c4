// Filters over sequences and mappings: select / map / join / sort / dictsort / unique / ...
#include <fmt/format.h>

#include <algorithm>

#include "chat/jinja/evaluator.h"
#include "chat/jinja/filters_internal.h"
#include "chat/jinja/py_format.h"
#include "chat/jinja/str_ops.h"

namespace ridge::chat::jinja::filter_impl {

Result<TString> to_str(const Value& v) { return py_str(v); }

bool arg_bool(const CallArgs& a, size_t i, std::string_view k, bool def) {
  const Value* v = a.get(i, k);
  return v == nullptr ? def : truthy(*v);
}

Value lower_if_str(const Value& v, bool case_sensitive) {
  if (case_sensitive || !v.is_string()) return v;
  return Value::string(py_case(v.str(), CaseOp::kLower));
}

Result<Value> attr_path(Renderer& r, const Value& item, const Value* attribute) {
  if (attribute == nullptr || attribute->is_none()) return item;
  if (attribute->kind == Kind::kInt) return r.get_item(item, *attribute);
  if (!attribute->is_string()) return Status::usage("attribute must be a string");
  Value cur = item;
  std::string_view path = attribute->str().s;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part(path.substr(start, dot == std::string_view::npos ? dot : dot - start));
    Value key = Value::string(part);
    if (!part.empty() && std::all_of(part.begin(), part.end(), ::isdigit) && part.size() < 18) {
      key = Value::integer(std::stoll(part));
    }
    RIDGE_ASSIGN_OR_RETURN(cur, r.get_item(cur, key));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return cur;
}

namespace {

Result<std::vector<Value>> sorted(std::vector<Value> items, bool reverse,
                                  const std::vector<Value>& keys) {
  std::vector<size_t> idx(items.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  Status err;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) {
    auto c = reverse ? compare(keys[y], keys[x]) : compare(keys[x], keys[y]);
    if (!c.ok()) {
      if (err.ok()) err = c.status();
      return false;
    }
    return *c < 0;
  });
  if (!err.ok()) return err;
  std::vector<Value> out;
  out.reserve(items.size());
  for (size_t i : idx) out.push_back(std::move(items[i]));
  return out;
}

}  // namespace

Result<Value> f_items(Renderer&, const Value& v, const CallArgs&) {
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) return Status::usage("Can only get item pairs from a mapping.");
  ValueList out;
  for (const auto& [k, x] : v.dict().entries) out.push_back(Value::list({k, x}, true));
  return Value::list(std::move(out));
}

Result<Value> f_list(Renderer& r, const Value& v, const CallArgs&) {
  RIDGE_ASSIGN_OR_RETURN(auto items, r.iterate(v));
  return Value::list(std::move(items));
}

Result<Value> select_common(Renderer& r, const Value& v, const CallArgs& a, bool by_attr,
                            bool keep) {
  RIDGE_ASSIGN_OR_RETURN(auto items, r.iterate(v));
  size_t first = by_attr ? 1 : 0;
  const Value* attribute = by_attr ? a.get(0, "") : nullptr;
  if (by_attr && attribute == nullptr) return Status::usage("missing attribute argument");
  CallArgs rest;
  for (size_t i = first + 1; i < a.pos.size(); ++i) rest.pos.push_back(a.pos[i]);
  rest.kw = a.kw;
  const Value* test = first < a.pos.size() ? &a.pos[first] : nullptr;
  ValueList out;
  for (const auto& item : items) {
    RIDGE_ASSIGN_OR_RETURN(Value x, attr_path(r, item, attribute));
    bool t = false;
    if (test == nullptr) {
      t = truthy(x);
    } else {
      if (!test->is_string()) return Status::usage("test name must be a string");
      RIDGE_ASSIGN_OR_RETURN(t, apply_test_named(r, test->str().s, x, rest));
    }
    if (t == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Result<Value> f_select(Renderer& r, const Value& v, const CallArgs& a) {
  return select_common(r, v, a, false, true);
}
Result<Value> f_reject(Renderer& r, const Value& v, const CallArgs& a) {
  return select_common(r, v, a, false, false);
}
Result<Value> f_selectattr(Renderer& r, const Value& v, const CallArgs& a) {
  return select_common(r, v, a, true, true);
}
Result<Value> f_rejectattr(Renderer& r, const Value& v, const CallArgs& a) {
  return select_common(r, v, a, true, false);
}

Result<Value> f_map(Renderer& r, const Value& v, const CallArgs& a) {
  RIDGE_ASSIGN_OR_RETURN(auto items, r.iterate(v));
  ValueList out;
  const Value* attribute = nullptr;
  for (const auto& [k, x] : a.kw) {
    if (k == "attribute") attribute = &x;
  }
  if (attribute != nullptr) {
    const Value* def = nullptr;
    for (const auto& [k, x] : a.kw) {
      if (k == "default") def = &x;
    }
    for (const auto& item : items) {
      RIDGE_ASSIGN_OR_RETURN(Value x, attr_path(r, item, attribute));
      out.push_back(x.is_undefined() && def != nullptr ? *def : x);
    }
    return Value::list(std::move(out));
  }
  if (a.pos.empty() || !a.pos[0].is_string()) return Status::usage("map: expected a filter name");
  CallArgs rest;
  rest.pos.assign(a.pos.begin() + 1, a.pos.end());
  rest.kw = a.kw;
  for (const auto& item : items) {
    RIDGE_ASSIGN_OR_RETURN(Value x, apply_filter_named(r, a.pos[0].str().s, item, rest));
    out.push_back(std::move(x));
  }
  return Value::list(std::move(out));
}

Result<Value> f_join(Renderer& r, const Value& v, const CallArgs& a) {
  RIDGE_ASSIGN_OR_RETURN(auto items, r.iterate(v));
  TString sep;
  if (const Value* d = a.get(0, "d")) {
    RIDGE_ASSIGN_OR_RETURN(sep, to_str(*d));
  }
  const Value* attribute = a.get(1, "attribute");
  TString out;
  for (size_t i = 0; i < items.size(); ++i) {
    RIDGE_ASSIGN_OR_RETURN(Value x, attr_path(r, items[i], attribute));
    RIDGE_ASSIGN_OR_RETURN(TString s, to_str(x));
    if (i > 0) out.append(sep);
    out.append(s);
  }
  return Value::string(std::move(out));
}

Result<Value> f_first(Renderer& r, const Value& v, const CallArgs&) {
  RIDGE_ASSIGN_OR_RETURN(auto items, r.iterate(v));
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Result<Value> f_last(Renderer& r, const Value& v, const CallArgs&) {
  RIDGE_ASSIGN_OR_RETURN(auto items, r.iterate(v));
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Result<Value> f_unique(Renderer& r, const Value& v, const CallArgs& a) {
  RIDGE_ASSIGN_OR_RETURN(auto items, r.iterate(v));
  bool cs = arg_bool(a, 0, "case_sensitive", false);
  const Value* attribute = a.get(1, "attribute");
  ValueList out, seen;
  for (const auto& item : items) {
    RIDGE_ASSIGN_OR_RETURN(Value k, attr_path(r, item, attribute));
    k = lower_if_str(k, cs);
    bool dup = false;
    for (const auto& s : seen) dup = dup || equals(s, k);
    if (dup) continue;
    seen.push_back(k);
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Result<Value> f_sort(Renderer& r, const Value& v, const CallArgs& a) {
  RIDGE_ASSIGN_OR_RETURN(auto items, r.iterate(v));
  bool rev = arg_bool(a, 0, "reverse", false);
  bool cs = arg_bool(a, 1, "case_sensitive", false);
  const Value* attribute = a.get(2, "attribute");
  std::vector<Value> keys;
  for (const auto& item : items) {
    RIDGE_ASSIGN_OR_RETURN(Value k, attr_path(r, item, attribute));
    keys.push_back(lower_if_str(k, cs));
  }
  RIDGE_ASSIGN_OR_RETURN(auto out, sorted(std::move(items), rev, keys));
  return Value::list(std::move(out));
}

Result<Value> f_dictsort(Renderer&, const Value& v, const CallArgs& a) {
  if (!v.is_dict()) return Status::usage("dictsort: expected a mapping");
  bool cs = arg_bool(a, 0, "case_sensitive", false);
  std::string by = "key";
  if (const Value* b = a.get(1, "by"); b != nullptr && b->is_string()) by = b->str().s;
  if (by != "key" && by != "value")
    return Status::usage("You can only sort by either \"key\" or \"value\"");
  bool rev = arg_bool(a, 2, "reverse", false);
  std::vector<Value> items, keys;
  for (const auto& [k, x] : v.dict().entries) {
    items.push_back(Value::list({k, x}, true));
    keys.push_back(lower_if_str(by == "key" ? k : x, cs));
  }
  RIDGE_ASSIGN_OR_RETURN(auto out, sorted(std::move(items), rev, keys));
  return Value::list(std::move(out));
}

Result<Value> f_reverse(Renderer& r, const Value& v, const CallArgs&) {
  if (v.is_string()) {
    std::vector<size_t> offs = cp_offsets(v.str().s);
    TString out;
    for (size_t i = offs.size() - 1; i > 0; --i) out.append(v.str().substr(offs[i - 1], offs[i]));
    return Value::string(std::move(out));
  }
  RIDGE_ASSIGN_OR_RETURN(auto items, r.iterate(v));
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Result<Value> f_sum(Renderer& r, const Value& v, const CallArgs& a) {
  RIDGE_ASSIGN_OR_RETURN(auto items, r.iterate(v));
  const Value* attribute = a.get(0, "attribute");
  Value acc = Value::integer(0);
  if (const Value* s = a.get(1, "start")) acc = *s;
  for (const auto& item : items) {
    RIDGE_ASSIGN_OR_RETURN(Value x, attr_path(r, item, attribute));
    RIDGE_ASSIGN_OR_RETURN(acc, binary_op("+", acc, x));
  }
  return acc;
}

template <bool kMax>
Result<Value> minmax(Renderer& r, const Value& v, const CallArgs& a) {
  RIDGE_ASSIGN_OR_RETURN(auto items, r.iterate(v));
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  bool cs = arg_bool(a, 0, "case_sensitive", false);
  const Value* attribute = a.get(1, "attribute");
  size_t best = 0;
  Value best_key;
  for (size_t i = 0; i < items.size(); ++i) {
    RIDGE_ASSIGN_OR_RETURN(Value k, attr_path(r, items[i], attribute));
    k = lower_if_str(k, cs);
    if (i == 0) {
      best_key = k;
      continue;
    }
    RIDGE_ASSIGN_OR_RETURN(int c, compare(k, best_key));
    if (kMax ? c > 0 : c < 0) {
      best = i;
      best_key = k;
    }
  }
  return items[best];
}

Result<Value> f_batch(Renderer& r, const Value& v, const CallArgs& a) {
  RIDGE_ASSIGN_OR_RETURN(auto items, r.iterate(v));
  const Value* n = a.get(0, "linecount");
  if (n == nullptr || n->kind != Kind::kInt || n->as_int() <= 0) {
    return Status::usage("batch: linecount must be a positive integer");
  }
  const Value* fill = a.get(1, "fill_with");
  auto size = static_cast<size_t>(n->as_int());
  ValueList out, cur;
  for (auto& item : items) {
    cur.push_back(std::move(item));
    if (cur.size() == size) out.push_back(Value::list(std::exchange(cur, {})));
  }
  if (!cur.empty()) {
    if (fill != nullptr && !fill->is_none()) {
      while (cur.size() < size) cur.push_back(*fill);
    }
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::list(std::move(out));
}

Result<Value> f_max(Renderer& r, const Value& v, const CallArgs& a) {
  return minmax<true>(r, v, a);
}
Result<Value> f_min(Renderer& r, const Value& v, const CallArgs& a) {
  return minmax<false>(r, v, a);
}

}  // namespace ridge::chat::jinja::filter_impl

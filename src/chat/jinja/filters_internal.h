// Shared by the filter files: argument helpers and the sequence filters (filters_seq.cpp).
#pragma once

#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/jinja/filters.h"
#include "chat/jinja/value.h"

namespace ridge::chat::jinja::filter_impl {

Result<TString> to_str(const Value& v);
bool arg_bool(const CallArgs& a, size_t i, std::string_view k, bool def);
Value lower_if_str(const Value& v, bool case_sensitive);
// jinja2's make_attrgetter: "a.b.0" looks up each part with getitem (null: the item itself).
Result<Value> attr_path(Renderer& r, const Value& item, const Value* attribute);

#define RIDGE_JINJA_FILTER(name) Result<Value> name(Renderer& r, const Value& v, const CallArgs& a)
RIDGE_JINJA_FILTER(f_items);
RIDGE_JINJA_FILTER(f_list);
RIDGE_JINJA_FILTER(f_select);
RIDGE_JINJA_FILTER(f_reject);
RIDGE_JINJA_FILTER(f_selectattr);
RIDGE_JINJA_FILTER(f_rejectattr);
RIDGE_JINJA_FILTER(f_map);
RIDGE_JINJA_FILTER(f_join);
RIDGE_JINJA_FILTER(f_first);
RIDGE_JINJA_FILTER(f_last);
RIDGE_JINJA_FILTER(f_unique);
RIDGE_JINJA_FILTER(f_sort);
RIDGE_JINJA_FILTER(f_dictsort);
RIDGE_JINJA_FILTER(f_reverse);
RIDGE_JINJA_FILTER(f_sum);
RIDGE_JINJA_FILTER(f_max);
RIDGE_JINJA_FILTER(f_min);
RIDGE_JINJA_FILTER(f_batch);
#undef RIDGE_JINJA_FILTER

}  // namespace ridge::chat::jinja::filter_impl

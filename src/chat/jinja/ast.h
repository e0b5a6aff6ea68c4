// The parsed template: expression and statement nodes. Immutable after parsing and shared by
// all renders (Template holds it behind a shared_ptr<const TemplateAst>).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja/value.h"

namespace ridge::chat::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  kConst,
  kName,
  kList,
  kTuple,
  kDict,
  kAttr,
  kItem,
  kSlice,
  kCall,
  kFilter,
  kTest,
  kNeg,
  kPos,
  kNot,
  kBinary,
  kAnd,
  kOr,
  kCompare,
  kCond,
};

struct Expr {
  ExprKind kind = ExprKind::kConst;
  int line = 0;
  Value value;           // kConst
  std::string name;      // kName; kAttr attribute; kFilter/kTest name; kBinary operator
  int fn_id = -1;        // kFilter/kTest: index in the filter/test table
  bool negated = false;  // kTest: "is not"
  // kAttr: [obj]; kItem: [obj, key]; kSlice: [obj, start, stop, step] (null when absent);
  // kCall: [callee, positional...]; kFilter/kTest: [input, positional...] (input null in a
  // filter block); kNeg/kPos/kNot: [x]; kBinary/kAnd/kOr: [l, r]; kCompare: [x, y, z...];
  // kCond: [then, cond, else (null when absent)]; kList/kTuple: items; kDict: k0, v0, k1, ...
  std::vector<ExprPtr> args;
  std::vector<std::string> ops;                         // kCompare: "==", "<", "in", "not in", ...
  std::vector<std::pair<std::string, ExprPtr>> kwargs;  // kCall, kFilter, kTest
};

enum class NodeKind {
  kText,
  kPrint,
  kIf,
  kFor,
  kSet,
  kSetBlock,
  kMacro,
  kCallBlock,
  kFilterBlock,
  kBreak,
  kContinue,
  kScope,
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using NodeList = std::vector<NodePtr>;

struct Node {
  NodeKind kind = NodeKind::kText;
  int line = 0;
  std::string text;  // kText bytes; kMacro name
  ExprPtr expr;      // kPrint; kSet value; kFor iterable; kCallBlock call; kFilterBlock filter
  ExprPtr cond;      // kFor: inline "if" filter
  std::vector<std::string> targets;  // kFor / kSet / kSetBlock names (several: unpacking)
  bool unpack = false;               // targets form a tuple
  std::string attr;                  // kSet / kSetBlock: "ns.attr" assignment to targets[0]
  std::vector<std::pair<ExprPtr, NodeList>> branches;  // kIf: (condition or null for else)
  NodeList body;                    // kFor, kSetBlock, kMacro, kCallBlock, kFilterBlock, kScope
  NodeList else_body;               // kFor
  std::vector<std::string> params;  // kMacro / kCallBlock (caller's parameters)
  std::vector<ExprPtr> defaults;    // same length as params; null where none
  bool recursive = false;           // kFor: "recursive" loops
};

struct TemplateAst {
  NodeList body;
};

}  // namespace ridge::chat::jinja

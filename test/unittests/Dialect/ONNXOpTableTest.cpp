//===- ONNXOpTableTest.cpp - The importer's table, generated from ODS -----===//
#include "comet/Dialect/ONNX/IR/ONNXOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace comet::onnx;

namespace {

std::string arity(const OpInfo &info) {
  auto range = [](unsigned lo, unsigned hi) {
    if (hi == ~0u)
      return std::to_string(lo) + "+";
    return std::to_string(lo) + "-" + std::to_string(hi);
  };
  return range(info.minInputs, info.maxInputs) + "/" +
         range(info.minOutputs, info.maxOutputs);
}

TEST(ONNXOpTable, SortedAndEveryEntryFound) {
  ArrayRef<OpInfo> ops = getSupportedOps();
  ASSERT_FALSE(ops.empty());
  for (size_t i = 0; i < ops.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(ops[i - 1].opType, ops[i].opType);
    }
    EXPECT_EQ(lookupOpInfo(ops[i].opType), &ops[i]) << ops[i].opType.str();
  }
  EXPECT_EQ(lookupOpInfo("HardSigmoid"), nullptr);
  EXPECT_EQ(lookupOpInfo(""), nullptr);
  EXPECT_EQ(lookupOpInfo("Zzz"), nullptr);
}

// Arity as the ODS operand and result lists give it: trailing ONNX_Opt*
// values may be left out, a Variadic one takes one or more.
TEST(ONNXOpTable, ArityFromODS) {
  auto check = [](StringRef opType, StringRef domain, StringRef want) {
    const OpInfo *info = lookupOpInfo(opType);
    ASSERT_NE(info, nullptr) << opType.str();
    EXPECT_EQ(StringRef(info->domain), domain) << opType.str();
    EXPECT_EQ(arity(*info), want.str()) << opType.str();
  };
  check("Conv", "", "2-3/1-1");
  check("Constant", "", "0-0/1-1");
  check("Sum", "", "1+/1-1");
  check("Split", "", "1-2/1+");
  check("BatchNormalization", "", "5-5/1-3");
  // Every result of ConvGrad is optional; a node still has one.
  check("ConvGrad", "com.microsoft", "3-3/1-3");
  // ONNX Runtime's schema: axes and steps optional.
  check("SliceGrad", "com.microsoft", "4-6/1-1");
  check("AdamWOptimizer", "com.microsoft", "6-7/1-4");
}

// Each entry is a registered op whose ODS operands and results the names
// list, one each.
TEST(ONNXOpTable, NamesMatchTheRegisteredOps) {
  MLIRContext ctx;
  ctx.loadDialect<ONNXDialect>();
  for (const OpInfo &info : getSupportedOps()) {
    std::string name = ("onnx." + info.opType).str();
    EXPECT_TRUE(RegisteredOperationName::lookup(name, &ctx)) << name;
    if (info.maxInputs != ~0u) {
      EXPECT_EQ(info.inputNames.size(), info.maxInputs) << name;
    }
    if (info.maxOutputs != ~0u) {
      EXPECT_EQ(info.outputNames.size(), info.maxOutputs) << name;
    }
    EXPECT_FALSE(info.summary.empty()) << name;
    EXPECT_FALSE(StringRef(info.summary).starts_with("[")) << name;
  }
  const OpInfo *grad = lookupOpInfo("ConvGrad");
  ASSERT_NE(grad, nullptr);
  EXPECT_EQ(grad->inputNames.vec(),
            (std::vector<StringLiteral>{"dY", "X", "W"}));
  EXPECT_EQ(grad->outputNames.vec(),
            (std::vector<StringLiteral>{"dX", "dW", "dB"}));
}

// Diagnostics name operands by their ODS names, and by position where a
// variadic list makes a name ambiguous.
TEST(ONNXOpTable, OperandNames) {
  MLIRContext ctx;
  ctx.loadDialect<ONNXDialect>();
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  auto t = RankedTensorType::get({2}, b.getF32Type());
  OperationState x(loc, "onnx.Constant");
  x.addAttribute("value_floats", b.getDenseF32ArrayAttr({1, 2}));
  x.addTypes(t);
  Operation *c = Operation::create(x);
  Value v = c->getResult(0);

  OperationState g(loc, "onnx.SigmoidGrad");
  g.addOperands({v, v});
  g.addTypes(t);
  Operation *grad = Operation::create(g);
  EXPECT_EQ(getOperandName(grad, 0), "dY");
  EXPECT_EQ(getOperandName(grad, 1), "Y");
  EXPECT_EQ(getResultName(grad, 0), "dX");

  OperationState s(loc, "onnx.Sum");
  s.addOperands({v, v, v});
  s.addTypes(t);
  Operation *sum = Operation::create(s);
  EXPECT_EQ(getOperandName(sum, 2), "operand #2");
  EXPECT_EQ(getResultName(sum, 0), "sum");

  sum->destroy();
  grad->destroy();
  c->destroy();
}

} // namespace

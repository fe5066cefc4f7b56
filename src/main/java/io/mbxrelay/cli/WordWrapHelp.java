package io.mbxrelay.cli;

import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Help;
import picocli.CommandLine.Help.Ansi.Text;
import picocli.CommandLine.Help.Column;
import picocli.CommandLine.Help.TextTable;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Model.PositionalParamSpec;

/**
 * Usage help whose option and parameter descriptions wrap at spaces only (issue 12 item 5). Picocli wraps with the
 * JDK's line {@link java.text.BreakIterator}, which also breaks after a dot or a hyphen inside a word, so values came
 * out split: {@code ~/.} / {@code local/share}, {@code relay.} / {@code lock}. Here a description is cut at the last
 * space that fits before picocli sees it; only a single word longer than the column is still broken by picocli.
 */
final class WordWrapHelp implements CommandLine.IHelpFactory {

  @Override
  public Help create(CommandSpec spec, Help.ColorScheme scheme) {
    return new Help(spec, scheme) {
      @Override
      public Layout createDefaultLayout() {
        return wrapAtSpaces(super.createDefaultLayout());
      }

      @Override
      public Layout createDefaultLayout(List<OptionSpec> options, List<PositionalParamSpec> positionals,
          Help.ColorScheme colorScheme) {
        return wrapAtSpaces(super.createDefaultLayout(options, positionals, colorScheme));
      }
    };
  }

  private static Help.Layout wrapAtSpaces(Help.Layout layout) {
    TextTable table = layout.textTable();
    return new Help.Layout(layout.colorScheme(), new SpaceWrappingTable(layout.colorScheme(), table),
        layout.optionRenderer(), layout.parameterRenderer());
  }

  /** A text table with the same columns whose wrapping columns are filled at spaces. */
  static final class SpaceWrappingTable extends TextTable {
    SpaceWrappingTable(Help.ColorScheme scheme, TextTable like) {
      super(scheme, like.columns());
      this.indentWrappedLines = like.indentWrappedLines;
      setAdjustLineBreaksForWideCJKCharacters(like.isAdjustLineBreaksForWideCJKCharacters());
    }

    @Override
    public Cell putValue(int row, int col, Text value) {
      Column c = columns()[col];
      String plain = value.plainString();
      int first = c.width - c.indent - 1; // picocli keeps one column free at the right edge of a wrapping column
      if (c.overflow != Column.Overflow.WRAP || plain.length() <= first || first <= indentWrappedLines) {
        return super.putValue(row, col, value);
      }
      Cell cell = null;
      int start = 0;
      int room = first;
      while (start < plain.length()) {
        int end = cut(plain, start, room);
        Text chunk = value.substring(start, end);
        if (cell == null) {
          cell = super.putValue(row, col, chunk);
        } else {
          addEmptyRow();
          // a continuation line: indented like picocli indents its own wrapped lines
          cell = super.putValue(rowCount() - 1, col, Help.Ansi.OFF.new Text(" ".repeat(indentWrappedLines))
              .concat(chunk));
        }
        start = end;
        while (start < plain.length() && plain.charAt(start) == ' ') {
          start++;
        }
        room = first - indentWrappedLines;
      }
      return cell;
    }

    /** End of the chunk that starts at {@code start}: the last space within {@code room}, else the word's end. */
    static int cut(String s, int start, int room) {
      if (s.length() - start <= room) {
        return s.length();
      }
      int space = s.lastIndexOf(' ', start + room);
      if (space > start) {
        return space;
      }
      int next = s.indexOf(' ', start);
      return next < 0 ? s.length() : next; // one word longer than the column: picocli breaks it
    }
  }
}
